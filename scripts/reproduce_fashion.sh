#!/usr/bin/env bash
# Reproduces the gradient-exchange comparison on Fashion-MNIST with this machine's
# CPUs: LeNet and ResNet-20, data parallel under mpirun, every exchange method,
# several seeds; writes results/fashion/TABLE.md, README.md and PNG plots.
#
#   scripts/reproduce_fashion.sh            full run (about 1 hour on 2 idle cores)
#   scripts/reproduce_fashion.sh --quick    LeNet only, 30 iterations, 1 seed, 2 and 4
#                                           ranks (a few minutes; what CI runs); writes
#                                           results/fashion/quick/, which git ignores
#   scripts/reproduce_fashion.sh --iwp-full the full-length protocol of the shipped
#                                           solver_iwp.prototxt files against DENSE, the
#                                           robustness grid and the ablation; writes
#                                           results/iwp_full/ (scripts/reproduce_iwp_full.sh
#                                           says what runs and how long it takes)
#
# Runs (batch 64 per rank; seeds set both random_seed and sync_param.seed):
#   at 4 ranks: DENSE, FIXED_THRESHOLD, IWP (global threshold, layer_wise: false),
#               IWP (layer-wise), TOPK_ALLGATHER, RANDOMK, SCALECOM, POWERSGD (rank 2)
#   at 2 and 8 ranks: IWP (layer-wise) and TOPK_ALLGATHER
# Every run sees the same number of images whatever N is: the iteration count is
# given for 4 ranks and scaled by 4/N (so a run costs about the same CPU time at any
# N). The sparse methods reach their density after a dense warm-up of 10% of the
# iterations and a ramp (1/4, then 1/16, 5% each); the table's exchange figures
# cover the steady state after that. base_lr stays the dense solver's at every N.
#
# Density: 1/64 for LeNet, 1/16 for ResNet-20 (LENET_DENSITY, RESNET_DENSITY). The
# exchange sends density x (all elements) per step and the blobs under
# min_layer_size (1024) always travel whole and count against that budget
# (ResidualExchange::SparseDensity). ResNet-20 has 4,463 such elements (BatchNorm
# and Scale parameters and statistics, conv1, the fc bias) against a budget of
# 4,278 at 1/64, which would leave one element per step to each of its 19
# convolution blobs (269,312 elements): they would barely train. At 1/16 they get
# about 1/21. FIXED_THRESHOLD's |v|/|w| threshold is set per net to send about as
# much as the budget in short 4-rank trials: 10 for LeNet (about 1/60), 2 for
# ResNet-20 (about 1/20); LENET_THRESHOLD, RESNET_THRESHOLD override them.
#
# Full-mode sizes, measured on the 2-core development VM with nothing else running
# (2026-12-01):
#   LeNet      1200 iterations at N=4 (2400 at N=2, 600 at N=8; 5.1 epochs), tested 4
#              times on the whole 10k test set: 35-45 s a run
#   ResNet-20  200 iterations at N=4 (400 at N=2, 100 at N=8; 0.85 epoch), rate 0.1
#              with warm-up and steps squeezed into the run, tested twice on the whole
#              test set: 54-64 s a run
#   30 runs per net, 3 seeds: about 20 + 30 minutes. Other jobs on the same cores
#   stretch that a lot: the ranks yield their cores while they wait in MPI, and builds
#   running beside them made single LeNet runs 2-6x slower; budget up to three hours
#   on a busy machine. Override with LENET_ITERS, RESNET_ITERS (at N=4) and
#   SEEDS="1 2 3".
#
# The vmr_exponent sweep (which sets IWP's default; see docs/iwp.md): at 4 ranks,
# layer-wise IWP once more per exponent in VMR_EXPONENTS (the proto's default
# exponent is the "IWP (layer-wise)" row itself), 3 more runs per net and exponent.
# Full mode leaves it out (VMR_EXPONENTS=""), keeping the whole run well inside three hours;
# the sweep that chose the default is committed in results/vmr_sweep/ with its own
# command line. Narrower runs: MODELS="lenet_fashion" (default both nets),
# RANK_SWEEP="" (skip the 2- and 8-rank rows; default "2 8"), VMR_EXPONENTS="",
# METHODS="DENSE IWP" (a subset of DENSE FIXED_THRESHOLD IWP_GLOBAL IWP TOPK_ALLGATHER
# RANDOMK SCALECOM POWERSGD; IWP is layer-wise IWP and also gates the vmr_exponent rows).
#
# Finished runs are kept in results/fashion/runs/ and not run again while their
# solver file's settings are unchanged (comments aside), so an interrupted full run resumes where it stopped
# (--fresh starts over). --out DIR writes elsewhere (the ctest uses a temporary folder). Environment: CAFFE_BUILD (default <repo>/build) must hold
# tools/caffe and tools/convert_idx; MPIRUN (default mpirun).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CAFFE_BUILD:-$repo/build}
mpirun=${MPIRUN:-mpirun}
mode=full
fresh=0
out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) mode=quick; shift ;;
    --iwp-full) mode=iwp_full; shift ;;
    --fresh) fresh=1; shift ;;
    --out) [[ $# -ge 2 ]] || { echo "error: --out needs a folder" >&2; exit 1; }; out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument $1 (expected --quick, --iwp-full, --fresh, --out DIR)" >&2; exit 1 ;;
  esac
done

fail() { echo "error: $*" >&2; exit 1; }
[[ -x $build/tools/caffe && -x $build/tools/upgrade_solver_proto_text ]] || fail "$build/tools/caffe or upgrade_solver_proto_text not found: build them first (cmake --build build --target caffe convert_idx upgrade_solver_proto_text) or set CAFFE_BUILD"
command -v "$mpirun" >/dev/null || fail "$mpirun not found (install openmpi-bin)"

# The --out folder as given (repository-relative where possible), for the report's command line.
out_arg=${out#"$repo"/}
if [[ -n $out ]]; then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
fi
if [[ $mode == quick ]]; then
  out=${out:-$repo/results/fashion/quick}
  models=(lenet_fashion)
  seeds=(1)
  lenet_iters=30
  main_ranks=4
  sweep_ranks=(2)
  vmr_exponents=(1)
elif [[ $mode == iwp_full ]]; then
  out=${out:-$repo/results/iwp_full}
  read -r -a models <<< "${MODELS:-lenet_fashion resnet20_fashion}"
  read -r -a seeds <<< "${SEEDS:-1 2 3}"
  for p in ${PARTS-}; do
    case $p in
      main|stretch|robustness|ranks|ablation|methods|int8|batchnorm) ;;
      *) fail "PARTS: unknown part '$p' (expected some of: main stretch robustness ranks ablation methods int8 batchnorm)" ;;
    esac
  done
  IFS=, read -r -a robust_cells <<< "${ROBUST_CELLS:-16 4,16 2,64 2,16 8,64 8}"
  for cell in "${robust_cells[@]}"; do
    [[ $cell =~ ^[0-9]+\ [0-9]+$ ]] || fail "ROBUST_CELLS: cell '$cell' is not \"BATCH N\" (expected e.g. \"16 2,64 8\")"
  done
else
  out=${out:-$repo/results/fashion}
  read -r -a models <<< "${MODELS:-lenet_fashion resnet20_fashion}"
  read -r -a seeds <<< "${SEEDS:-1 2 3}"
  lenet_iters=${LENET_ITERS:-1200}
  main_ranks=4
  read -r -a sweep_ranks <<< "${RANK_SWEEP-2 8}"
  read -r -a vmr_exponents <<< "${VMR_EXPONENTS-}"
fi
all_methods="DENSE FIXED_THRESHOLD IWP_GLOBAL IWP TOPK_ALLGATHER RANDOMK SCALECOM POWERSGD"
read -r -a methods <<< "${METHODS:-$all_methods}"
[[ $mode == quick ]] && read -r -a methods <<< "$all_methods"
for m in "${methods[@]}"; do
  [[ " $all_methods " == *" $m "* ]] || fail "METHODS: unknown method '$m' (expected some of: $all_methods)"
done
wanted() { [[ " ${methods[*]} " == *" $1 "* ]]; }
for model in "${models[@]}"; do
  [[ -f $repo/models/$model/solver_dense.prototxt ]] || fail "MODELS: no models/$model/solver_dense.prototxt"
done
resnet_iters=${RESNET_ITERS:-200}
runs=$out/runs
[[ $fresh == 1 ]] && rm -rf "$runs"
mkdir -p "$runs"

cd "$repo"
CAFFE_BUILD=$build data/get_fashion_mnist.sh

lenet_density=${LENET_DENSITY:-0.015625}
resnet_density=${RESNET_DENSITY:-0.0625}
density_of() { if [[ $1 == lenet_fashion ]]; then echo "$lenet_density"; else echo "$resnet_density"; fi; }
threshold_of() { if [[ $1 == lenet_fashion ]]; then echo "${LENET_THRESHOLD:-10}"; else echo "${RESNET_THRESHOLD:-2}"; fi; }

# solver_for MODEL METHOD LAYER_WISE N SEED ITERS SOLVER [VMR_EXPONENT]: writes the
# solver file.
solver_for() {
  local model=$1 method=$2 layer_wise=$3 n=$4 seed=$5 iters=$6 solver=$7 vmr=${8:-}
  local warmup=$(( iters / 10 )) ramp=$(( iters / 20 ))
  (( ramp >= 1 )) || ramp=1
  local display=$(( iters / 20 ))
  (( display >= 1 )) || display=1
  local test_iter test_interval
  local -a fields=()
  # Tests on the whole 10k test set (1000 images in quick mode): four per LeNet run,
  # two per ResNet-20 run (each costs it 12-17 s here).
  test_iter=100; test_interval=$(( iters / 4 ))
  [[ $mode == quick ]] && test_iter=10
  if [[ $model == resnet20_fashion ]]; then
    test_interval=$(( iters / 2 ))
    # The solver's schedule squeezed into the run: warm-up 10%, rate / 10 at 50% and 75%.
    fields+=("warmup_iter=$warmup" "stepvalue=$(( iters / 2 ))" "stepvalue=$(( iters * 3 / 4 ))")
  fi
  (( test_interval >= 1 )) || test_interval=1
  # The last test must fall on the last iteration: Final reports the latest scores.
  while (( iters % test_interval )); do test_interval=$(( test_interval + 1 )); done
  local sync="method: $method seed: $seed"
  if [[ $method != DENSE ]]; then
    sync+=" density: $(density_of "$model") warmup_iter: $warmup density_schedule: 0.25"
    sync+=" density_schedule: 0.0625 density_schedule_iter: $ramp"
  fi
  local iwp=""
  [[ $method == IWP ]] && iwp+=" layer_wise: $layer_wise"
  [[ -n $vmr ]] && iwp+=" vmr_exponent: $vmr"
  [[ $method == FIXED_THRESHOLD ]] && iwp+=" fixed_threshold: $(threshold_of "$model")"
  [[ -n $iwp ]] && sync+=" iwp_param {$iwp }"
  # PowerSGD's budget is its rank (rank 2 sends about as many values as IWP at 1/80 on
  # LeNet); the density settings above only time its dense warm-up.
  [[ $method == POWERSGD ]] && sync+=" powersgd_param { rank: 2 }"
  python3 scripts/make_solver.py "models/$model/solver_dense.prototxt" "$solver" \
    "max_iter=$iters" "test_iter=$test_iter" "test_interval=$test_interval" \
    "test_initialization=false" "display=$display" "snapshot=0" "snapshot_after_train=false" \
    "snapshot_prefix=\"$runs/snapshot\"" "random_seed=$seed" "solver_mode=CPU" \
    "${fields[@]}" --sync "$sync"
}

# This invocation's runs only: invocations may run side by side over the same $runs (a
# long part training while another is tabled), and one's report must not take the
# other's runs. The report keeps what the list held (rows.csv), so it goes on exit.
manifest=$runs/manifest.$$.csv
trap 'rm -f "$manifest"' EXIT
echo "model,method,label,N,seed,iters,steady_from,log,sync_stats,wall_s" > "$manifest"
started=$(date +%s)
count=0

# run_name MODEL LABEL N SEED: the file name of a run.
run_name() {
  echo "${1}_$(echo "$2" | sed 's/-\([0-9]\)/m\1/g' | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9\n' '_' | sed 's/_*$//')_np${3}_s${4}"
}

# run MODEL METHOD LABEL LAYER_WISE N SEED ITERS [VMR_EXPONENT]
run() {
  local model=$1 method=$2 label=$3 layer_wise=$4 n=$5 seed=$6 iters=$7 vmr=${8:-}
  local name
  name=$(run_name "$model" "$label" "$n" "$seed")
  solver_for "$model" "$method" "$layer_wise" "$n" "$seed" "$iters" "$runs/$name.prototxt.new" "$vmr"
  local steady=$(( iters / 10 + 2 * (iters / 20 >= 1 ? iters / 20 : 1) ))
  [[ $method == DENSE ]] && steady=0
  run_solver "$model" "$method" "$label" "$n" "$seed" "$iters" "$steady"
}

# solver_settings FILE: a solver file as caffe reads it, in the current form, without
# comments or layout (tools/upgrade_solver_proto_text), so that a run recorded with
# sync_param's older flat form still counts as the same settings.
solver_settings() {
  local canonical
  canonical=$(mktemp)
  "$build/tools/upgrade_solver_proto_text" "$1" "$canonical" > /dev/null && cat "$canonical"
  rm -f "$canonical"
}

# finished_before NAME: the run NAME finished (wall time and Final: line) with the
# settings of the solver now written to NAME.prototxt.new (the shipped solvers'
# comments are copied into the run's file, and rewording them changes no run).
finished_before() {
  [[ -f $runs/$1.wall && -f $runs/$1.prototxt ]] &&
    cmp -s <(solver_settings "$runs/$1.prototxt") <(solver_settings "$runs/$1.prototxt.new") &&
    grep -q "Final:" "$runs/$1.log"
}

# run_solver MODEL METHOD LABEL N SEED ITERS STEADY_FROM: trains the solver written
# to <run name>.prototxt.new, unless the same solver finished before, and adds the
# run to the manifest (the exchange figures count from iteration STEADY_FROM).
run_solver() {
  local model=$1 method=$2 label=$3 n=$4 seed=$5 iters=$6 steady=$7
  local name
  name=$(run_name "$model" "$label" "$n" "$seed")
  local solver=$runs/$name.prototxt log=$runs/$name.log stats=$runs/$name.sync.csv
  local wall_file=$runs/$name.wall
  if finished_before "$name"; then
    rm -f "$solver.new"
    echo "$name: done before ($(cat "$wall_file") s)"
  else
    mv "$solver.new" "$solver"
    rm -f "$wall_file"
    local t0 t1
    t0=$(date +%s.%N)
    if ! "$mpirun" --allow-run-as-root --oversubscribe -np "$n" "$build/tools/caffe" train \
        -solver "$solver" -sync_stats "$stats" > "$log" 2>&1; then
      tail -20 "$log" >&2
      fail "$name failed; log: $log"
    fi
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' > "$wall_file"
    count=$(( count + 1 ))
    echo "$name: $(cat "$wall_file") s ($(grep -o 'test 0/accuracy = [0-9.]*' "$log" | tail -1)); $(( $(date +%s) - started )) s so far"
  fi
  # The label may hold a comma ("IWP, density / 2"): quoted, as CSV readers expect.
  echo "$model,$method,\"$label\",$n,$seed,$iters,$steady,$log,$stats,$(cat "$wall_file")" >> "$manifest"
}

if [[ $mode == iwp_full ]]; then
  # The full-length protocol (results/iwp_full/README.md), its own file.
  source "$repo/scripts/reproduce_iwp_full.sh"
  exit 0
fi

for model in "${models[@]}"; do
  if [[ $model == lenet_fashion ]]; then base_iters=$lenet_iters; else base_iters=$resnet_iters; fi
  for seed in "${seeds[@]}"; do
    iters=$base_iters
    if wanted DENSE; then run "$model" DENSE DENSE true "$main_ranks" "$seed" "$iters"; fi
    if wanted FIXED_THRESHOLD; then run "$model" FIXED_THRESHOLD FIXED_THRESHOLD true "$main_ranks" "$seed" "$iters"; fi
    if wanted IWP_GLOBAL; then run "$model" IWP "IWP (global)" false "$main_ranks" "$seed" "$iters"; fi
    if wanted IWP; then run "$model" IWP "IWP (layer-wise)" true "$main_ranks" "$seed" "$iters"; fi
    if wanted TOPK_ALLGATHER; then run "$model" TOPK_ALLGATHER TOPK_ALLGATHER true "$main_ranks" "$seed" "$iters"; fi
    if wanted RANDOMK; then run "$model" RANDOMK RANDOMK true "$main_ranks" "$seed" "$iters"; fi
    if wanted SCALECOM; then run "$model" SCALECOM SCALECOM true "$main_ranks" "$seed" "$iters"; fi
    if wanted POWERSGD; then run "$model" POWERSGD "POWERSGD rank 2" true "$main_ranks" "$seed" "$iters"; fi
    if wanted IWP; then
      for vmr in "${vmr_exponents[@]}"; do
        run "$model" IWP "IWP (layer-wise) vmr_exponent $vmr" true "$main_ranks" "$seed" "$iters" "$vmr"
      done
    fi
    for n in "${sweep_ranks[@]}"; do
      iters=$(( base_iters * main_ranks / n ))
      if wanted IWP; then run "$model" IWP "IWP (layer-wise)" true "$n" "$seed" "$iters"; fi
      if wanted TOPK_ALLGATHER; then run "$model" TOPK_ALLGATHER TOPK_ALLGATHER true "$n" "$seed" "$iters"; fi
    done
  done
done

if [[ $mode == quick ]]; then
  title="Fashion-MNIST gradient exchange: QUICK check (not results)"
  sizes="Quick mode (\`scripts/reproduce_fashion.sh --quick\`): LeNet only, $lenet_iters iterations at N=4 (scaled by 4/N), seed 1, tested on 1000 images. A smoke test of the pipeline; the accuracies mean nothing."
else
  title="Fashion-MNIST gradient exchange: DENSE vs IWP vs baselines"
  sizes="Full mode: batch 64 per rank; LeNet $lenet_iters iterations at N=4 (x 4/N at other N), ResNet-20 $resnet_iters iterations at N=4 (x 4/N; rate 0.1 with warm-up and steps squeezed into the run); top-1 on the whole 10k test set; seeds ${seeds[*]}. About an hour on the idle 2-core development VM; runs this short compare the methods, they do not reach the nets' final accuracy."
fi
# The command line as run, with the overrides that shaped it.
overrides=""
for var in MODELS METHODS SEEDS LENET_ITERS RESNET_ITERS RANK_SWEEP VMR_EXPONENTS LENET_DENSITY RESNET_DENSITY LENET_THRESHOLD RESNET_THRESHOLD; do
  [[ $mode == full && -n ${!var+set} ]] && overrides+="$var=\"${!var}\" "
done
vmr_default=$(sed -n 's/.*vmr_exponent = [0-9]* \[default = \([-0-9.]*\)\].*/\1/p' proto/caffe.proto)
vmr_note="\"IWP (layer-wise)\" uses the default vmr_exponent ($vmr_default)."
if (( ${#vmr_exponents[@]} > 0 )); then
  vmr_note+=" The \"vmr_exponent X\" rows are the same run with that exponent (0: the same density in every blob; positive: blobs whose importance has a larger variance-to-mean ratio get more of the budget; negative: less)."
else
  vmr_note+=" The sweep over exponents that chose it: results/vmr_sweep/."
fi
python3 scripts/repro_report.py --manifest "$manifest" --out "$out" --title "$title" \
  --note "$sizes" \
  --note "$vmr_note" \
  --note "Sparse methods: density $lenet_density for LeNet$([[ $mode == full ]] && echo " and $resnet_density for ResNet-20 (at 1/64 ResNet-20's small always-dense blobs, 4,463 elements, would use up the whole budget of 4,278 and leave one element per step to each convolution; see the script's header)"), reached after a dense warm-up (10% of the iterations) and a ramp (1/4, 1/16, 5% each); FIXED_THRESHOLD sends every element with |v|/|w| >= $(threshold_of lenet_fashion) (LeNet)$([[ $mode == full ]] && echo ", $(threshold_of resnet20_fashion) (ResNet-20)"). Machine: $(nproc) cores, $(uname -m), ranks oversubscribed under mpirun --oversubscribe. Generated $(date -u +%Y-%m-%d)." \
  --command "${overrides}scripts/reproduce_fashion.sh$([[ $mode == quick ]] && echo ' --quick')${out_arg:+ --out $out_arg}" \
  --curve-ranks "$main_ranks"
echo "reproduce_fashion: $count run(s) trained, $(( $(date +%s) - started )) s; see $out/TABLE.md"
