#!/usr/bin/env bash
# Bundle what numguard needs on a GPU host that has no package index (Python, torch,
# onnx, onnxruntime, numpy and click already there): the TVM wheels, numguard's other
# pure-Python needs, and a wheel of numguard itself, for one Python version.
#
#   tools/bundle_offline.sh DIR [PYTHON_VERSION] [PART_SIZE]
#
# DIR gets the wheels; the TVM wheel (96 MiB) is split into parts of PART_SIZE (48M
# by default) for hosts that take files in parts: DIR/apache_tvm-*.whl.part-aa, -ab.
# Copy DIR there and run tools/install_offline.sh DIR SITE. Runs here, where pip
# reaches the index; nothing downloads on the GPU host.
set -euo pipefail
dir=${1:?usage: tools/bundle_offline.sh DIR [PYTHON_VERSION] [PART_SIZE]}
py=${2:-3.12}
part=${3:-48M}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
platforms=()
for n in 17 24 27 28 31 34; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)
# the versions numguard pins (pyproject.toml) and what they need beyond the host's packages
binary=(apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.15.post2 ml-dtypes rpds-py)
pure=(jsonschema jsonschema-specifications referencing attrs pebble networkx typing-extensions)
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    "${platforms[@]}" -d "$dir" "${binary[@]}"
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir" "${pure[@]}"
python3 -m pip wheel --quiet --no-deps -w "$dir" "$here"
for wheel in "$dir"/apache_tvm-*.whl; do
    split -b "$part" "$wheel" "$wheel.part-"
    rm "$wheel"
done
ls -l "$dir"
