# Sourced by the scripts that run bertlab from a checkout: quiet, offline-first settings, the data
# mirror beside the checkout (../shared/data) unless one is named already (elsewhere the datasets
# are downloaded from their canonical URLs), and the checkout's .venv python when there is one.
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
if [ -z "${BERTLAB_DATA_MIRROR:-}" ] && [ -f ../shared/data/SHA256SUMS ]; then
    BERTLAB_DATA_MIRROR=$(cd ../shared/data && pwd)
    export BERTLAB_DATA_MIRROR
fi
# (an `if`, not `[ ... ] && PY=...`: as the last line of a sourced file under `set -e`, a false
# test would end the calling script without a word)
if [ -z "${PY:-}" ]; then
    PY=python
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
fi
