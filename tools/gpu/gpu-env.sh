# Sourced by gpu-check and gpu-shim-check: what a bare GPU machine offers,
# found one way for both. The toolkit (nvcc on PATH, else CUDA_HOME, else
# /usr/local/cuda); meson and ninja on PATH or as python3's pip packages;
# the build dependencies the machine lacks, .deps/ from prepare-gpu-deps
# (MSCCLPP_GPU_DEPS names another folder); the real NCCL, library and
# nccl.h: MSCCLPP_NCCL_LIB_PATH, the toolkit's, else python3's nvidia-nccl
# package; and the device, from nvidia-smi.

# cuda_home, and the toolkit's bin on PATH for meson.
gpu_env_toolkit() {
  local nvcc
  if nvcc=$(command -v nvcc); then
    cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
  else
    cuda_home=${CUDA_HOME:-/usr/local/cuda}
    export PATH="$PATH:$cuda_home/bin"
  fi
  nvcc_version=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)
}

# meson_cmd (an array) and ninja on PATH; 1 with a message when either is missing.
gpu_env_build_tools() {
  if command -v meson >/dev/null 2>&1; then
    meson_cmd=(meson)
  elif python3 -c 'import mesonbuild.mesonmain' >/dev/null 2>&1; then
    meson_cmd=(python3 -m mesonbuild.mesonmain)
  else
    echo "neither meson on PATH nor python3's meson package" >&2
    return 1
  fi
  if ! command -v ninja >/dev/null 2>&1; then
    local dir
    dir=$(python3 -c 'import ninja, os; print(ninja.BIN_DIR)' 2>/dev/null)
    [ -n "$dir" ] && [ -x "$dir/ninja" ] || { echo "neither ninja on PATH nor python3's ninja package" >&2; return 1; }
    export PATH="$dir:$PATH"  # meson runs ninja by name
  fi
}

# deps_dir: the folder of missing build dependencies, empty when there is none.
gpu_env_deps() {
  local root=$1
  deps_dir=${MSCCLPP_GPU_DEPS:-$root/.deps}
  [ -d "$deps_dir/include" ] || deps_dir=""
}

# nccl_lib and nccl_inc (the folder holding nccl.h), each empty when not found.
gpu_env_nccl() {
  local pip_dir
  pip_dir=$(python3 -c 'import nvidia.nccl as n, os; print(list(n.__path__)[0])' 2>/dev/null)
  nccl_lib=${MSCCLPP_NCCL_LIB_PATH:-}
  if [ -z "$nccl_lib" ]; then
    for f in "$cuda_home/lib64/libnccl.so.2" "$cuda_home/lib/libnccl.so.2" "$pip_dir/lib/libnccl.so.2"; do
      [ -f "$f" ] && { nccl_lib=$f; break; }
    done
  fi
  nccl_inc=""
  for d in "${deps_dir:-/nonexistent}/include" "$cuda_home/include" /usr/include "$pip_dir/include"; do
    [ -f "$d/nccl.h" ] && { nccl_inc=$d; break; }
  done
}

# gpu_name, gpu_driver, gpu_cc (90 for 9.0) and gpu_count; 1 when nvidia-smi sees no GPU.
gpu_env_device() {
  nvidia-smi -L >/dev/null 2>&1 || return 1
  gpu_count=$(nvidia-smi -L | grep -c '^GPU ')
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  gpu_driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
  gpu_cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  [ -n "$gpu_cc" ]
}

# The meson setup arguments of a GPU machine's build: the CUDA backend
# for the given archs, the dependencies folder, the tests.
gpu_env_setup_args() {
  local archs=$1
  setup_args=(-Dbuildtype=debugoptimized -Dgpu=enabled "-Dgpu_archs=$archs" -Dtests=true)
  [ -n "$deps_dir" ] && setup_args+=("-Dextra_prefix=$deps_dir")
  # nccl.h for the shim, found where the toolkit has none.
  [ -n "$nccl_inc" ] && export CPATH="$nccl_inc${CPATH:+:$CPATH}"
  return 0
}
