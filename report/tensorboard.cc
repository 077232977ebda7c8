#include "report/tensorboard.h"

#include <boost/crc.hpp>

#include <cstdlib>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "report/tensorboard_event.pb.h"

namespace dtsim::report {
namespace {

void PutLittleEndian(std::string* out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::uint32_t Crc32c(std::string_view data) {
  // Width 32, polynomial 0x1EDC6F41, initial and final XOR all ones,
  // reflected in and out: CRC-32C.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

std::uint32_t MaskedCrc32c(std::string_view data) {
  const std::uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

EventFile::EventFile(double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  AddRecord(event.SerializeAsString());
}

void EventFile::AddScalar(const std::string& tag, std::int64_t step, double wall_time,
                          float value) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  AddRecord(event.SerializeAsString());
}

namespace {

// TensorBoard's names (tensorboard/plugins/hparams/metadata.py).
constexpr const char* kHParamsPlugin = "hparams";
constexpr const char* kExperimentTag = "_hparams_/experiment";
constexpr const char* kSessionStartTag = "_hparams_/session_start_info";
constexpr const char* kSessionEndTag = "_hparams_/session_end_info";

tensorboard::ProtoValue Value(const EventFile::HParam& h, const std::string& text) {
  tensorboard::ProtoValue v;
  if (h.numeric) {
    v.set_number_value(std::strtod(text.c_str(), nullptr));
  } else {
    v.set_string_value(text);
  }
  return v;
}

// `m` serialized with its map entries in key order: the same message gives
// the same bytes in every process (protobuf orders maps by hash otherwise).
std::string DeterministicBytes(const google::protobuf::MessageLite& m) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream coded(&raw);
    coded.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// An event of one summary value `tag` for the HParams plugin, `data` its
// content, with the plugin's empty float tensor (metadata.NULL_TENSOR).
std::string HParamsEvent(const char* tag, const tensorboard::HParamsPluginData& data,
                         double wall_time) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  tensorboard::PluginData* plugin = v->mutable_metadata()->mutable_plugin_data();
  plugin->set_plugin_name(kHParamsPlugin);
  plugin->set_content(DeterministicBytes(data));
  tensorboard::Tensor* t = v->mutable_tensor();
  t->set_dtype(1);  // DT_FLOAT
  t->mutable_tensor_shape()->add_dim()->set_size(0);
  return event.SerializeAsString();
}

}  // namespace

void EventFile::AddHParamsExperiment(const std::vector<HParam>& hparams,
                                     const std::vector<std::string>& metric_tags,
                                     double wall_time) {
  tensorboard::HParamsPluginData data;
  data.set_version(0);
  tensorboard::Experiment* e = data.mutable_experiment();
  for (const HParam& h : hparams) {
    tensorboard::HParamInfo* info = e->add_hparam_infos();
    info->set_name(h.name);
    info->set_type(h.numeric ? 3 : 1);  // DATA_TYPE_FLOAT64, DATA_TYPE_STRING
    for (const std::string& text : h.values) {
      *info->mutable_domain_discrete()->add_values() = Value(h, text);
    }
  }
  for (const std::string& tag : metric_tags) {
    e->add_metric_infos()->mutable_name()->set_tag(tag);
  }
  AddRecord(HParamsEvent(kExperimentTag, data, wall_time));
}

void EventFile::AddHParamsSessionStart(const std::vector<HParam>& hparams,
                                       const std::vector<std::size_t>& choice, double wall_time) {
  tensorboard::HParamsPluginData data;
  data.set_version(0);
  tensorboard::SessionStartInfo* start = data.mutable_session_start_info();
  start->set_start_time_secs(wall_time);
  for (std::size_t a = 0; a < hparams.size() && a < choice.size(); ++a) {
    if (choice[a] >= hparams[a].values.size()) continue;  // the session does not use it
    (*start->mutable_hparams())[hparams[a].name] = Value(hparams[a], hparams[a].values[choice[a]]);
  }
  AddRecord(HParamsEvent(kSessionStartTag, data, wall_time));
}

void EventFile::AddHParamsSessionEnd(bool success, double wall_time) {
  tensorboard::HParamsPluginData data;
  data.set_version(0);
  data.mutable_session_end_info()->set_status(success ? 1 : 2);  // STATUS_SUCCESS, _FAILURE
  data.mutable_session_end_info()->set_end_time_secs(wall_time);
  AddRecord(HParamsEvent(kSessionEndTag, data, wall_time));
}

void EventFile::AddRecord(const std::string& data) {
  std::string header;
  PutLittleEndian(&header, data.size(), 8);
  bytes_ += header;
  PutLittleEndian(&bytes_, MaskedCrc32c(header), 4);
  bytes_ += data;
  PutLittleEndian(&bytes_, MaskedCrc32c(data), 4);
}

}  // namespace dtsim::report
