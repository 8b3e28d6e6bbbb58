#!/usr/bin/env bash
# Reproduces the ImageNet comparison: AlexNet and ResNet-50 trained with the dense
# exchange and with IWP under mpirun across the hosts of a hostfile, then the same
# TABLE.md (and README.md, plots) as scripts/reproduce_fashion.sh.
#
#   scripts/reproduce_imagenet.sh --data DIR --hostfile FILE --np N --iters K [options]
#   scripts/reproduce_imagenet.sh --smoke       a tiny generated ImageNet-shaped set,
#                                               2 ranks, a few AlexNet iterations
#                                               (about a minute on 2 cores; a ctest)
#
# DIR holds ILSVRC-2012 as BVLC Caffe's examples/imagenet expects it: DIR/train/ and
# DIR/val/ with the JPEGs, DIR/train.txt and DIR/val.txt listing "relative/path label"
# (labels 0..999; BVLC's data/ilsvrc12/get_ilsvrc_aux.sh fetches these lists).
# Steps, each skipped when its output already exists (conversion takes hours):
#   1. convert_imageset -resize_height 256 -resize_width 256 -shuffle into
#      DB/ilsvrc12_train_lmdb and DB/ilsvrc12_val_lmdb; compute_image_mean over the
#      train LMDB into DB/imagenet_mean.binaryproto (DB: --db, default data/imagenet)
#   2. per model and method, a copy of models/<model>/train_val.prototxt pointing at
#      DB and a solver from models/<model>/solver_dense.prototxt with K iterations,
#      a test at the end and, for IWP, a sync_param block (runs in OUT/runs/)
#   3. mpirun --hostfile FILE -np N build/tools/caffe train -solver ... -sync_stats ...
#   4. scripts/repro_report.py: OUT/TABLE.md, OUT/README.md, plots
# Every host must see the repository, the build and DB at the same paths (a shared
# file system) and run the same build; rank 0 writes the logs.
#
# Options:
#   --models "alexnet resnet50"  which nets (default both)
#   --methods "DENSE IWP"        exchange methods (any of DENSE IWP FIXED_THRESHOLD
#                                TOPK_ALLGATHER RANDOMK; IWP is layer-wise)
#   --density D                  sparse density (default 0.015625 = 1/64)
#   --warmup W                   dense warm-up iterations (default K/10, then a
#                                ramp 1/4, 1/16 of K/20 iterations each)
#   --seeds "1"                  random_seed and sync seed per run (default 1)
#   --test-iters T               test batches at the end (default: the solver's,
#                                the whole 50k validation set)
#   --per-rank-batch             keep the prototxt's batch per rank; by default the
#                                global batch stays the reference 256: AlexNet's
#                                batch_size becomes 256/N, ResNet-50's iter_size 8/N
#   --gpu all|none               pass -gpu all (one rank per local GPU) or run on
#                                CPUs (default: all when nvidia-smi works here)
#   --db DIR, --out DIR          databases (data/imagenet), results (results/imagenet)
#   --build DIR                  build folder (default $CAFFE_BUILD or <repo>/build)
# Smoke mode writes everything under OUT (default results/imagenet/smoke, which git
# ignores): 48 train + 16 val PPM images of two classes made by python3, 2 ranks on
# localhost through a generated hostfile, AlexNet with fc8 of 2 outputs, batch 2,
# 6 iterations, DENSE and IWP.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CAFFE_BUILD:-$repo/build}
mpirun=${MPIRUN:-mpirun}
data="" hostfile="" np="" iters="" smoke=0
models="alexnet resnet50" methods="DENSE IWP" density=0.015625 warmup="" seeds="1"
test_iters="" per_rank_batch=0 gpu="" db="" out=""

fail() { echo "error: $*" >&2; exit 1; }
need_value() { [[ $# -ge 2 && -n $2 ]] || fail "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) smoke=1; shift ;;
    --data) need_value "$@"; data=$2; shift 2 ;;
    --hostfile) need_value "$@"; hostfile=$2; shift 2 ;;
    --np) need_value "$@"; np=$2; shift 2 ;;
    --iters) need_value "$@"; iters=$2; shift 2 ;;
    --models) need_value "$@"; models=$2; shift 2 ;;
    --methods) need_value "$@"; methods=$2; shift 2 ;;
    --density) need_value "$@"; density=$2; shift 2 ;;
    --warmup) need_value "$@"; warmup=$2; shift 2 ;;
    --seeds) need_value "$@"; seeds=$2; shift 2 ;;
    --test-iters) need_value "$@"; test_iters=$2; shift 2 ;;
    --per-rank-batch) per_rank_batch=1; shift ;;
    --gpu) need_value "$@"; gpu=$2; shift 2 ;;
    --db) need_value "$@"; db=$2; shift 2 ;;
    --out) need_value "$@"; out=$2; shift 2 ;;
    --build) need_value "$@"; build=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument $1 (see --help)" ;;
  esac
done

abspath() { python3 -c 'import os, sys; print(os.path.abspath(sys.argv[1]))' "$1"; }
for tool in caffe convert_imageset compute_image_mean; do
  [[ -x $build/tools/$tool ]] || fail "$build/tools/$tool not found: build it first (cmake --build build --target caffe convert_imageset compute_image_mean) or pass --build"
done
command -v "$mpirun" >/dev/null || fail "$mpirun not found (install openmpi-bin)"
build=$(abspath "$build")
cd "$repo"

if [[ $smoke == 1 ]]; then
  out=$(abspath "${out:-results/imagenet/smoke}")
  # Start clean, removing only what smoke mode itself writes.
  mkdir -p "$out"
  rm -rf "$out/images" "$out/db" "$out/runs" "$out/hostfile" "$out/TABLE.md" "$out/README.md"
  rm -f "$out"/*.png "$out"/*_bytes.csv
  data=$out/images db=$out/db hostfile=$out/hostfile
  np=2 iters=6 models=alexnet seeds=1 gpu=none test_iters=2
  [[ -n $warmup ]] || warmup=2
  echo "localhost slots=$np" > "$hostfile"
  # Two classes a small net can tell apart after a few steps: reddish and bluish
  # noise. PPM needs no image library; OpenCV (convert_imageset) reads it.
  python3 - "$data" <<'EOF'
import os, random, sys
root = sys.argv[1]
rng = random.Random(7)
def write_ppm(path, label, size=48):
    pixels = bytearray()
    for _ in range(size * size):
        base = (200, 60, 60) if label == 0 else (60, 60, 200)
        pixels += bytes(max(0, min(255, c + rng.randint(-50, 50))) for c in base)
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (size, size) + bytes(pixels))
for split, per_class in (("train", 24), ("val", 8)):
    lines = []
    for label in (0, 1):
        folder = os.path.join(root, split, "class%d" % label)
        os.makedirs(folder, exist_ok=True)
        for i in range(per_class):
            name = "class%d/img%03d.ppm" % (label, i)
            write_ppm(os.path.join(root, split, name), label)
            lines.append("%s %d" % (name, label))
    with open(os.path.join(root, split + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
EOF
else
  [[ -n $data && -n $hostfile && -n $np && -n $iters ]] || fail "give --data DIR --hostfile FILE --np N --iters K (or --smoke); see --help"
  [[ -f $hostfile ]] || fail "hostfile $hostfile not found"
  [[ $np =~ ^[1-9][0-9]*$ && $iters =~ ^[1-9][0-9]*$ ]] || fail "--np and --iters must be positive integers"
  out=$(abspath "${out:-results/imagenet}")
  db=$(abspath "${db:-data/imagenet}")
  data=$(abspath "$data") hostfile=$(abspath "$hostfile")
fi
[[ -n $warmup ]] || warmup=$(( iters / 10 ))
if [[ -z $gpu ]]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=all; else gpu=none; fi
fi
for f in train.txt val.txt; do [[ -f $data/$f ]] || fail "$data/$f not found (see --help for the layout)"; done
for d in train val; do [[ -d $data/$d ]] || fail "$data/$d/ not found (see --help for the layout)"; done
runs=$out/runs
mkdir -p "$db" "$runs"

# Step 1: databases and the mean image.
convert() {
  local split=$1 name=$2
  if [[ -f $db/$name/data.mdb ]]; then
    echo "$db/$name: already there"
    return
  fi
  rm -rf "$db/$name.partial"
  echo "converting $split ($(wc -l < "$data/$split.txt") images) into $db/$name ..."
  "$build/tools/convert_imageset" -resize_height 256 -resize_width 256 -shuffle \
    "$data/$split/" "$data/$split.txt" "$db/$name.partial" > "$runs/convert_$split.log" 2>&1 \
    || { tail -5 "$runs/convert_$split.log" >&2; fail "convert_imageset failed for $split"; }
  mv "$db/$name.partial" "$db/$name"
}
convert train ilsvrc12_train_lmdb
convert val ilsvrc12_val_lmdb
mean=$db/imagenet_mean.binaryproto
if [[ ! -f $mean ]]; then
  "$build/tools/compute_image_mean" "$db/ilsvrc12_train_lmdb" "$mean.partial" > "$runs/mean.log" 2>&1 \
    || { tail -5 "$runs/mean.log" >&2; fail "compute_image_mean failed"; }
  mv "$mean.partial" "$mean"
fi

# Step 2-3: runs.
manifest=$runs/manifest.csv
echo "model,method,label,N,seed,iters,steady_from,log,sync_stats,wall_s" > "$manifest"
ramp=$(( iters / 20 ))
[[ $smoke == 1 ]] && ramp=0
steady=$(( warmup + 2 * ramp ))
started=$(date +%s)

for model in $models; do
  [[ -f models/$model/train_val.prototxt ]] || fail "unknown model $model (models/$model/ missing)"
  net=$runs/${model}_train_val.prototxt
  net_args=(--path "data/imagenet/ilsvrc12_train_lmdb=$db/ilsvrc12_train_lmdb"
            --path "data/imagenet/ilsvrc12_val_lmdb=$db/ilsvrc12_val_lmdb")
  grep -q '"data/imagenet/imagenet_mean.binaryproto"' "models/$model/train_val.prototxt" &&
    net_args+=(--path "data/imagenet/imagenet_mean.binaryproto=$mean")
  solver_args=()
  if [[ $smoke == 1 ]]; then
    net_args+=(--batch "$db/ilsvrc12_train_lmdb=2" --batch "$db/ilsvrc12_val_lmdb=2"
               --num-output "fc8=2")
  elif [[ $per_rank_batch == 0 ]]; then
    # Keep the reference global batch of 256 images.
    case $model in
      alexnet) net_args+=(--batch "$db/ilsvrc12_train_lmdb=$(( 256 / np > 0 ? 256 / np : 1 ))") ;;
      resnet50) solver_args+=("iter_size=$(( 8 / np > 0 ? 8 / np : 1 ))") ;;
    esac
  fi
  python3 scripts/make_net.py "models/$model/train_val.prototxt" "$net" "${net_args[@]}"
  [[ -n $test_iters ]] && solver_args+=("test_iter=$test_iters")
  # ResNet-50's schedule: rate steps scaled into the K iterations, warm-up 5%.
  if [[ $model == resnet50 ]]; then
    solver_args+=("stepvalue=$(( iters / 3 > 0 ? iters / 3 : 1 ))" "stepvalue=$(( iters * 2 / 3 > 0 ? iters * 2 / 3 : 1 ))"
                  "stepvalue=$(( iters * 8 / 9 > 0 ? iters * 8 / 9 : 1 ))" "warmup_iter=$(( iters / 20 ))")
  else
    solver_args+=("stepsize=$(( iters / 3 > 0 ? iters / 3 : 1 ))")
  fi
  for seed in $seeds; do
    for method in $methods; do
      name="${model}_$(echo "$method" | tr 'A-Z' 'a-z')_np${np}_s${seed}"
      solver=$runs/$name.prototxt log=$runs/$name.log stats=$runs/$name.sync.csv
      sync="method: $method seed: $seed"
      if [[ $method != DENSE ]]; then
        sync+=" density: $density warmup_iter: $warmup"
        (( ramp > 0 )) && sync+=" density_schedule: 0.25 density_schedule: 0.0625 density_schedule_iter: $ramp"
      fi
      python3 scripts/make_solver.py "models/$model/solver_dense.prototxt" "$solver" \
        "net=\"$net\"" "max_iter=$iters" "test_interval=$iters" "test_initialization=false" \
        "display=$(( iters / 20 > 0 ? iters / 20 : 1 ))" "snapshot=0" "snapshot_after_train=false" \
        "snapshot_prefix=\"$runs/$name\"" "random_seed=$seed" \
        "solver_mode=$([[ $gpu == all ]] && echo GPU || echo CPU)" \
        "${solver_args[@]}" --sync "$sync"
      gpu_flag=()
      [[ $gpu == all ]] && gpu_flag=(-gpu all)
      echo "$name: training ($np ranks, $iters iterations) ..."
      t0=$(date +%s.%N)
      "$mpirun" --allow-run-as-root --oversubscribe --hostfile "$hostfile" -np "$np" \
        "$build/tools/caffe" train -solver "$solver" -sync_stats "$stats" "${gpu_flag[@]}" \
        > "$log" 2>&1 || { tail -20 "$log" >&2; fail "$name failed; log: $log"; }
      t1=$(date +%s.%N)
      wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
      echo "$name: $wall s, $(grep -o 'Final:.*' "$log" | cut -c1-160)"
      from=$steady
      [[ $method == DENSE ]] && from=0
      echo "$model,$method,$method,$np,$seed,$iters,$from,$log,$stats,$wall" >> "$manifest"
    done
  done
done

# Step 4: the report.
if [[ $smoke == 1 ]]; then
  title="ImageNet pipeline: SMOKE check (generated images, not results)"
  note="Smoke mode (\`scripts/reproduce_imagenet.sh --smoke\`): 48 generated 48x48 images of 2 classes resized to 256x256, AlexNet with fc8 of 2 outputs, batch 2 per rank, $np ranks, $iters iterations. Checks the pipeline (convert_imageset, compute_image_mean, Data layer, mpirun with a hostfile, the report); the numbers mean nothing."
else
  title="ImageNet: DENSE vs IWP"
  note="$np ranks from $(basename "$hostfile"), $iters iterations per run ($([[ $per_rank_batch == 0 ]] && echo "global batch 256: AlexNet 256/N per rank, ResNet-50 32 per rank x iter_size 8/N" || echo "the prototxts' batch per rank")), learning-rate steps scaled into the run, top-1 on the validation set at the end. Sparse methods: density $density after $warmup dense iterations and a ramp (1/4, 1/16, $ramp iterations each). Devices: $([[ $gpu == all ]] && echo "one GPU per rank" || echo CPUs)."
fi
python3 scripts/repro_report.py --manifest "$manifest" --out "$out" --title "$title" \
  --note "$note" --note "Generated $(date -u +%Y-%m-%d) in $(( $(date +%s) - started )) s of training." \
  --command "scripts/reproduce_imagenet.sh $([[ $smoke == 1 ]] && echo --smoke || echo "--data $data --hostfile $hostfile --np $np --iters $iters")" \
  --curve-ranks "$np"
echo "reproduce_imagenet: see $out/TABLE.md"
