#!/usr/bin/env bash
# Builds the Fashion-MNIST LMDBs the example models read:
#   data/fashion_mnist/train_lmdb (60000 records) and data/fashion_mnist/test_lmdb (10000),
# from Debian's dataset-fashion-mnist package (installed with apt-get when missing),
# using the already-built tools/convert_idx. Databases that already exist and are
# complete are kept. Environment:
#   CAFFE_BUILD        build folder holding tools/convert_idx (default: <repo>/build)
#   FASHION_MNIST_DIR  folder with the *-ubyte.gz files (default: the package's)
set -euo pipefail

data_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$data_dir")
build=${CAFFE_BUILD:-$repo/build}
source_dir=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
out_dir=$data_dir/fashion_mnist
convert=$build/tools/convert_idx

fail() {
  echo "error: $*" >&2
  exit 1
}

files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz
       t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)

have_all_files() {
  local f
  for f in "${files[@]}"; do [[ -f $source_dir/$f ]] || return 1; done
}

if ! have_all_files; then
  [[ -z ${FASHION_MNIST_DIR:-} ]] || fail "Fashion-MNIST files missing in $source_dir"
  echo "installing dataset-fashion-mnist ..."
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist
  have_all_files || fail "dataset-fashion-mnist did not install the files into $source_dir"
fi

[[ -x $convert ]] || fail "$convert not found; build it first (cmake --build build --target convert_idx) or set CAFFE_BUILD"

# Item count from an IDX header: bytes 4..7, big-endian.
idx_count() {
  local b
  read -r -a b < <(od -An -tu1 -j4 -N4 <(gzip -dc "$1"))
  [[ ${#b[@]} -eq 4 ]] || fail "$1: cannot read its IDX header"
  echo $(( (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3] ))
}

# convert NAME IMAGES LABELS: writes $out_dir/NAME unless a complete copy exists. The
# database is built under a temporary name and renamed at the end, with its record
# count stored beside the data, so an interrupted run never looks complete.
convert() {
  local name=$1 images=$source_dir/$2 labels=$source_dir/$3
  local db=$out_dir/$name expected
  expected=$(idx_count "$labels")
  if [[ -f $db/data.mdb && -f $db/RECORDS && $(cat "$db/RECORDS") == "$expected" ]]; then
    echo "$name: $expected records (already there)"
    return
  fi
  rm -rf "$db" "$db.partial"
  "$convert" "$images" "$labels" "$db.partial" >/dev/null
  echo "$expected" > "$db.partial/RECORDS"
  mv "$db.partial" "$db"
  echo "$name: $expected records"
}

mkdir -p "$out_dir"
convert train_lmdb train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz
convert test_lmdb t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz
