#!/usr/bin/env bash
# Regenerates the Chakra traces under plan/testdata/chakra/ with MLCommons
# Chakra's own tools; tests/chakra_fixtures_test.cc simulates them.
#
#   scripts/chakra_fixtures.sh CHAKRA_CHECKOUT
#
# CHAKRA_CHECKOUT is a clone of https://github.com/mlcommons/chakra. The
# committed fixtures were written with these files of it (each at the
# commit given; a checkout where they are unchanged writes the same bytes):
#   schema/protobuf/et_def.proto     f5124d76bb7c3ba2ad67cb8386ad0f450a88e88e
#   src/generator/generator.py       757be094bc428819dcd977d18ffcc4d529376c56
#   src/converter/text_converter.py  8547a198e1bc17c5bfa55c85e63e92376bb81969
#   src/third_party/utils/protolib.py 430cc00a0bd267b69736ad83591b204d356a467a
# run with Debian 12's python3 and python3-protobuf (3.21). Chakra's package
# is laid out as chakra.schema.protobuf and chakra.src.*, as its
# pyproject.toml installs it (pip install CHAKRA_CHECKOUT gives the
# chakra_generator and chakra_converter commands used below).
#
# generator/: `chakra_generator --num_npus 4` (defaults: 5 us compute nodes,
#   65536-byte collectives), every trace it writes.
# text/: `chakra_converter --input_type Text` on the workload files in
#   text/*.txt (ASTRA-sim's text format): data_parallel on 2 NPUs, 2 passes;
#   model_parallel on 2 NPUs, 1 pass; hybrid_data_model on 4 NPUs, 1 pass.
set -euo pipefail
chakra=${1:?usage: scripts/chakra_fixtures.sh CHAKRA_CHECKOUT}
here="$(cd "$(dirname "$0")/.." && pwd)/plan/testdata/chakra"
command -v chakra_generator >/dev/null && command -v chakra_converter >/dev/null || {
  echo "install Chakra first: pip install $chakra" >&2
  exit 2
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/generator" "$work/text"
(cd "$work/generator" && chakra_generator --num_npus 4)
for spec in data_parallel:2:2 model_parallel:2:1 hybrid_data_model:4:1; do
  IFS=: read -r name npus passes <<<"$spec"
  chakra_converter --input_type Text --input_filename "$here/text/$name.txt" \
    --output_filename "$work/text/$name" --num_npus "$npus" --num_passes "$passes" \
    --log_filename "$work/$name.log"
done
rm -f "$here"/generator/*.et "$here"/text/*.et
cp "$work"/generator/*.et "$here/generator/"
cp "$work"/text/*.et "$here/text/"
echo "wrote $(ls "$here"/generator/*.et "$here"/text/*.et | wc -l) traces under $here"
