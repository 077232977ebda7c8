// onnx_fixture_writer FILE: writes torchvision's ResNet-50 as an ONNX file
// (models/onnx_test_models.h) with the message classes Debian's libonnx-dev
// generates from ONNX's own onnx.proto. models_test reads the file with
// dtsim's importer: a check of dtsim's schema (models/onnx_model.proto)
// against ONNX's that does not share its field numbers.
#include <fstream>
#include <iostream>

#include <onnx/onnx_pb.h>

#include "models/onnx_test_models.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: onnx_fixture_writer FILE\n";
    return 2;
  }
  onnx::ModelProto model;
  dtsim::models::onnx_test::WriteResNet50(&model);
  std::ofstream out(argv[1], std::ios::binary);
  if (!out || !model.SerializeToOstream(&out)) {
    std::cerr << "onnx_fixture_writer: cannot write " << argv[1] << "\n";
    return 1;
  }
  return 0;
}
