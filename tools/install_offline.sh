#!/usr/bin/env bash
# Install a bundle made by tools/bundle_offline.sh, with no package index:
#
#   tools/install_offline.sh DIR SITE
#   export PYTHONPATH=SITE      # then: python3 -m tvm_numguard.cli ... (or numguard, if SITE/bin is on PATH)
#
# The TVM wheel's parts are joined first. --no-deps: the host's own torch, onnx,
# onnxruntime, numpy and click are used as they are.
set -euo pipefail
dir=${1:?usage: tools/install_offline.sh DIR SITE}
site=${2:?usage: tools/install_offline.sh DIR SITE}
for first in "$dir"/*.whl.part-aa; do
    [ -e "$first" ] || continue
    wheel=${first%.part-aa}
    cat "$wheel".part-* > "$wheel"
done
python3 -m pip install --quiet --no-index --no-deps --no-compile --target "$site" "$dir"/*.whl
PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" python3 -c "import tvm, tvm_numguard; print('numguard', tvm_numguard.__version__, 'with TVM', tvm.__version__)"
