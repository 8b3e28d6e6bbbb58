# The full-length protocol of IWP against DENSE (docs/iwp.md, "Full-length
# results"), sourced by `scripts/reproduce_fashion.sh --iwp-full`, which has set up
# the build, the data, $runs, $manifest and run_solver, and has checked $PARTS and
# read models, seeds and robust_cells ($ROBUST_CELLS). Every run is a shipped
# models/<net>/solver_iwp.prototxt with at most a few fields changed:
#
#   main        LeNet (3000 iterations) and ResNet-20 (4000), 4 ranks x batch 64:
#               DENSE (the same file with method: DENSE) and IWP, seeds $SEEDS
#   stretch     IWP at twice the compression (density / 2), LeNet seeds $SEEDS,
#               ResNet-20 seeds $STRETCH_SEEDS (default 1), there also with one
#               global threshold (layer_wise: false) and with score: MAGNITUDE
#   robustness  DENSE and IWP at batch 16 and 64 per rank on 2, 4 and 8
#               ranks, seeds $ROBUST_SEEDS (default 1); on ResNet-20 the cells
#               $ROBUST_CELLS ("BATCH N" pairs, default "16 4,16 2,64 2,16 8,64 8")
#   ranks       LeNet, TOPK_ALLGATHER at IWP's density on 2, 4 and 8 ranks (bytes per
#               rank against N, with the robustness grid's IWP rows)
#   ablation    ResNet-20, IWP with one ingredient removed or changed per row, at the
#               same density, seeds $ABLATION_SEEDS (default 1)
#   methods     what users pick instead, from the same file with method (and its own
#               fields) changed, seeds $METHOD_SEEDS (default "1 2 3"): DENSE with FP32
#               values (the main part's DENSE carries FP16, as Horovod's fp16
#               compression does), POWERSGD rank 1, 2 and 4 with FP16 factors, and
#               SCALECOM (cyclic local top-k) at IWP's density with scalecom_beta 1,
#               0.5 and 0.1, and with beta 1 at density / 2 (beside the stretch
#               part's IWP); on ResNet-20 only POWERSGD rank 2 and SCALECOM beta 1;
#               and on both nets RANDOMK (shared-seed random coordinates) at the IWP
#               row's bytes on the wire (on LeNet also without the rate limit and with
#               momentum correction), and at the stretch row's. Not in the default
#               PARTS: 36 LeNet and 12 ResNet-20 runs more.
#   int8        IWP with value_encoding INT8 (a byte a value and a float a block of
#               64, against FP16's two bytes a value) at the shipped density x 1.6
#               and x 0.8: about the wire ratios of the main and the stretch rows
#               (68x and 134x), with more coordinates each; seeds $INT8_SEEDS
#               (default "1 2 3"), factors $INT8_FACTORS (default "1.6 0.8"). Not in
#               the default PARTS: 6 runs per net.
#   batchnorm   LeNet with a BatchNorm and a Scale after conv1, conv2 and ip1 (tabled
#               as lenet_fashion_bn): DENSE, and IWP and RANDOMK at the bytes of the
#               LeNet IWP and RANDOMK rows and at those of the stretch rows, and IWP
#               with score MAGNITUDE at both, seeds $BATCHNORM_SEEDS (default
#               "1 2 3"). Does BatchNorm take away the edge of IWP's choice? Not in
#               the default PARTS: 21 LeNet runs.
#
# The rows of options since removed (weight_floor, the BatchNorm-aware scores; their
# records: results/iwp_explore/NOTEBOOK.md) are no longer made; rows.csv keeps their
# lines.
#
# FINISHED_ONLY=1 trains nothing: the table gets the runs of the chosen parts that
# finished before, and the others are left out (the ResNet-20 ablation, about four
# hours, can be tabled part by part). ONLY_LABEL=TEXT keeps the runs whose row label
# contains TEXT and skips the others (e.g. ONLY_LABEL="no rate limit"
# ABLATION_SEEDS="2 3" adds seeds to one ablation row).
#
# PARTS="main stretch robustness ranks ablation" (the default) picks parts, MODELS
# ("lenet_fashion resnet20_fashion", the default) the nets. Writes
# results/iwp_full/TABLE.md, README.md, rows.csv and plots; a row this run does not
# make again (a net or a part left out) keeps its line from rows.csv
# (repro_report.py --merge), and plots of a run without the main part are named
# <net>_curves_np4_<parts>.png (PLOT_TAG=TAG names them <net>_curves_np4_TAG.png
# instead, so that a report of some rows keeps an earlier report's plots). Measured on the 2-core
# development VM with nothing else running: a LeNet run takes 1.5-4 minutes (8
# ranks and batch 64 the longest), a ResNet-20 run 16-20 minutes (35-50 with a build
# running beside it; batch 16 on 4 ranks took 13 minutes beside another run,
# batch 64 on 8 ranks should take about twice the 4-rank run, not yet measured);
# the default set is 31 LeNet and 33 ResNet-20 runs, about 9.5 hours. Finished runs are kept and
# reused while their solver files' settings are unchanged (comments aside).

read -r -a parts <<< "${PARTS:-main stretch robustness ranks ablation}"
read -r -a stretch_seeds <<< "${STRETCH_SEEDS:-1}"
read -r -a robust_seeds <<< "${ROBUST_SEEDS:-1}"
read -r -a ablation_seeds <<< "${ABLATION_SEEDS:-1}"
read -r -a method_seeds <<< "${METHOD_SEEDS:-1 2 3}"
read -r -a int8_seeds <<< "${INT8_SEEDS:-1 2 3}"
read -r -a batchnorm_seeds <<< "${BATCHNORM_SEEDS:-1 2 3}"
read -r -a int8_factors <<< "${INT8_FACTORS:-1.6 0.8}"
part() { [[ " ${parts[*]} " == *" $1 "* ]]; }
has_model() { [[ " ${models[*]} " == *" $1 "* ]]; }

# sync_value MODEL FIELD: a field of the shipped solver's sync_param block.
sync_value() {
  python3 - "$repo/models/$1/solver_iwp.prototxt" "$2" "$repo/scripts" <<'EOF'
import sys
sys.path.insert(0, sys.argv[3])
import make_solver
block = make_solver.split_block(open(sys.argv[1]).read().splitlines(), "sync_param")[1]
print(" ".join(v for n, v in make_solver.parse_entries(block) if n == sys.argv[2]))
EOF
}

# iwp_run MODEL BATCH N SEED LABEL METHOD [SYNC_SET ...]: the shipped solver, with
# the seed, the per-rank batch and the listed sync_param fields changed. With
# net_variant=NAME set, the net is $runs/MODEL_NAME_train_val.prototxt (written
# before) and the runs are tabled as model MODEL_NAME.
iwp_run() {
  local model=$1 batch=$2 n=$3 seed=$4 label=$5 method=$6
  shift 6
  [[ -z ${ONLY_LABEL:-} || $label == *"$ONLY_LABEL"* ]] || return 0
  local tag=$model net=$repo/models/$model/train_val.prototxt
  local -a fields=("random_seed=$seed" "snapshot=0" "snapshot_after_train=false"
                   "snapshot_prefix=\"$runs/snapshot\"" "solver_mode=CPU")
  if [[ -n ${net_variant:-} ]]; then
    tag=${model}_$net_variant
    net=$runs/${tag}_train_val.prototxt
  fi
  if [[ $batch != 64 ]]; then
    # The train data layer is the first batch_size in the net file.
    sed "0,/batch_size: 64/s//batch_size: $batch/" "$net" > "$runs/${tag}_b${batch}_train_val.prototxt"
    tag=${tag}_b${batch}
    net=$runs/${tag}_train_val.prototxt
  fi
  [[ $net == "$repo/models/$model/train_val.prototxt" ]] || fields+=("net=\"$net\"")
  local -a sets=(--sync-set "method: $method" --sync-set "seed: $seed")
  for s in "$@"; do sets+=(--sync-set "$s"); done
  local name
  name=$(run_name "$tag" "$label" "$n" "$seed")
  python3 "$repo/scripts/make_solver.py" "$repo/models/$model/solver_iwp.prototxt" \
    "$runs/$name.prototxt.new" "${fields[@]}" "${sets[@]}"
  local iters steady=0
  iters=$(sed -n 's/^max_iter: *\([0-9]*\).*/\1/p' "$runs/$name.prototxt.new")
  if [[ $method != DENSE ]]; then
    # The steady state starts after the dense warm-up and the density ramp.
    steady=$(python3 - "$runs/$name.prototxt.new" "$repo/scripts" <<'EOF'
import sys
sys.path.insert(0, sys.argv[2])
import make_solver
block = make_solver.split_block(open(sys.argv[1]).read().splitlines(), "sync_param")[1]
entries = make_solver.parse_entries(block)
values = lambda name: [v for n, v in entries if n == name]
warm = int((values("warmup_iter") or [0])[0])
every = int((values("density_schedule_iter") or [100])[0])
print(warm + len(values("density_schedule")) * every)
EOF
)
  fi
  if [[ ${FINISHED_ONLY:-0} == 1 ]] && ! finished_before "$name"; then
    rm -f "$runs/$name.prototxt.new"
    echo "$name: not finished, left out (FINISHED_ONLY=1)"
    return 0
  fi
  run_solver "$tag" "$method" "$label" "$n" "$seed" "$iters" "$steady"
}

lenet_density=$(sync_value lenet_fashion density)
resnet_density=$(sync_value resnet20_fashion density)
half() { awk -v d="$1" 'BEGIN { printf "%.8g\n", d / 2 }'; }
times() { awk -v d="$1" -v f="$2" 'BEGIN { printf "%.8g\n", d * f }'; }

if part main; then
  for model in "${models[@]}"; do
    for seed in "${seeds[@]}"; do
      iwp_run "$model" 64 4 "$seed" DENSE DENSE
      iwp_run "$model" 64 4 "$seed" IWP IWP
    done
  done
fi
if part stretch; then
  if has_model lenet_fashion; then
    for seed in "${seeds[@]}"; do
      iwp_run lenet_fashion 64 4 "$seed" "IWP, density / 2" IWP "density: $(half "$lenet_density")"
    done
  fi
  if has_model resnet20_fashion; then
    for seed in "${stretch_seeds[@]}"; do
      iwp_run resnet20_fashion 64 4 "$seed" "IWP, density / 2" IWP "density: $(half "$resnet_density")"
      # The ablation's one change that scored above the shipped row at 68x, at the
      # compression where the selection has half the coordinates to spend.
      iwp_run resnet20_fashion 64 4 "$seed" "IWP, one global threshold, density / 2" IWP \
        "density: $(half "$resnet_density")" "iwp_param.layer_wise: false"
      # On LeNet with BatchNorm |v| beat |v|/|w| at this compression (the batchnorm part).
      iwp_run resnet20_fashion 64 4 "$seed" "IWP, density / 2, |v| instead of |v|/|w|" IWP \
        "density: $(half "$resnet_density")" "iwp_param.score: MAGNITUDE"
    done
  fi
fi
if part robustness && has_model lenet_fashion; then
  for seed in "${robust_seeds[@]}"; do
    for batch in 16 64; do
      for n in 2 4 8; do
        [[ $batch == 64 && $n == 4 ]] && continue  # the main part's runs
        iwp_run lenet_fashion "$batch" "$n" "$seed" DENSE DENSE
        iwp_run lenet_fashion "$batch" "$n" "$seed" IWP IWP
      done
    done
  done
fi
if part robustness && has_model resnet20_fashion; then
  # The cheapest cells first: a ResNet-20 run at batch 64 on 8 ranks takes about
  # twice the main part's 4-rank run here.
  for seed in "${robust_seeds[@]}"; do
    for cell in "${robust_cells[@]}"; do
      read -r batch n <<< "$cell"
      iwp_run resnet20_fashion "$batch" "$n" "$seed" DENSE DENSE
      iwp_run resnet20_fashion "$batch" "$n" "$seed" IWP IWP
    done
  done
fi
if part ranks && has_model lenet_fashion; then
  for seed in "${robust_seeds[@]}"; do
    for n in 2 4 8; do
      iwp_run lenet_fashion 64 "$n" "$seed" TOPK_ALLGATHER TOPK_ALLGATHER
    done
  done
fi
if part ablation && has_model resnet20_fashion; then
  shipped_warmup=$(sync_value resnet20_fashion warmup_iter)
  for seed in "${ablation_seeds[@]}"; do
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, |v| instead of |v|/|w|" IWP "iwp_param.score: MAGNITUDE"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, one global threshold" IWP "iwp_param.layer_wise: false"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, uniform density" IWP "iwp_param.vmr_exponent: 0"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, no stochastic update" IWP "iwp_param.stochastic_fraction: 0"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, no rate limit" IWP "max_relative_step: 0"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, momentum correction" IWP "momentum_correction: true"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, local clipping" IWP "clip_norm: 5"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, no warm-up" IWP "warmup_iter: 0" "density_schedule:"
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, warm-up x 2" IWP "warmup_iter: $(( 2 * shipped_warmup ))"
    # N index messages of k/N indices cost more bytes than one of k (the gaps are N
    # times longer): on ResNet-20 at density x 0.864 (LeNet's match) they came to 25.7
    # kB a step against the IWP row's 24.1 kB, so x 0.8 sends the IWP row's bytes.
    iwp_run resnet20_fashion 64 4 "$seed" "IWP, every rank leads, density x 0.8" IWP \
      "iwp_param.leader: EVERY_RANK" "density: $(times "$resnet_density" 0.8)"
  done
fi

if part batchnorm && has_model lenet_fashion; then
  # Does BatchNorm take away the edge of IWP's choice over random coordinates? On
  # LeNet IWP beats RANDOMK at the same bytes; on the BatchNorm ResNet-20 it does not.
  # Here LeNet gets a BatchNorm and a Scale after conv1, conv2 and ip1 and nothing else
  # changes: the shipped solver, and RANDOMK at the densities that matched the bytes of
  # the plain LeNet rows (the methods part).
  python3 "$repo/scripts/make_net.py" "$repo/models/lenet_fashion/train_val.prototxt" \
    "$runs/lenet_fashion_bn_train_val.prototxt" \
    --batchnorm-after conv1 --batchnorm-after conv2 --batchnorm-after ip1
  for seed in "${batchnorm_seeds[@]}"; do
    net_variant=bn iwp_run lenet_fashion 64 4 "$seed" DENSE DENSE
    net_variant=bn iwp_run lenet_fashion 64 4 "$seed" IWP IWP
    net_variant=bn iwp_run lenet_fashion 64 4 "$seed" "RANDOMK, same bytes" RANDOMK \
      "density: 0.0296" "iwp_param.leader:"
    # Is it the |w| of the importance that BatchNorm turns against the choice?
    net_variant=bn iwp_run lenet_fashion 64 4 "$seed" "IWP, |v| instead of |v|/|w|" IWP \
      "iwp_param.score: MAGNITUDE"
    # And at twice the compression, where sparsifying costs more (the LeNet stretch
    # row's density and the RANDOMK density that matched its bytes).
    net_variant=bn iwp_run lenet_fashion 64 4 "$seed" "IWP, density / 2" IWP \
      "density: $(half "$lenet_density")"
    net_variant=bn iwp_run lenet_fashion 64 4 "$seed" "RANDOMK, same bytes as density / 2" RANDOMK \
      "density: 0.0149" "iwp_param.leader:"
    net_variant=bn iwp_run lenet_fashion 64 4 "$seed" "IWP, density / 2, |v| instead of |v|/|w|" \
      IWP "density: $(half "$lenet_density")" "iwp_param.score: MAGNITUDE"
  done
fi

if part int8; then
  for model in "${models[@]}"; do
    density=$(sync_value "$model" density)
    for seed in "${int8_seeds[@]}"; do
      for factor in "${int8_factors[@]}"; do
        iwp_run "$model" 64 4 "$seed" "IWP, INT8 values, density x $factor" IWP \
          "value_encoding: INT8" "density: $(times "$density" "$factor")"
      done
    done
  done
fi

if part methods; then
  # PowerSGD applies a low-rank matrix, so the per-coordinate rate limit goes.
  for seed in "${method_seeds[@]}"; do
    if has_model lenet_fashion; then
      iwp_run lenet_fashion 64 4 "$seed" "DENSE, FP32 values" DENSE "value_encoding: FP32"
      for r in 1 2 4; do
        iwp_run lenet_fashion 64 4 "$seed" "POWERSGD rank $r, FP16" POWERSGD \
          "powersgd_param.rank: $r" "max_relative_step:"
      done
      for beta in 1 0.5 0.1; do
        iwp_run lenet_fashion 64 4 "$seed" "SCALECOM, beta $beta" SCALECOM "scalecom_param.beta: $beta"
      done
      # Beside the stretch part's IWP at twice the compression.
      iwp_run lenet_fashion 64 4 "$seed" "SCALECOM, beta 1, density / 2" SCALECOM \
        "scalecom_param.beta: 1" "density: $(half "$lenet_density")"
    fi
    # Random coordinates at the IWP row's bytes: RANDOMK sends values only (the shared
    # seed names the coordinates), so FP16 values at density d come to 2 / d on the
    # wire: 2 / 67.5 for LeNet (IWP's 67.5x; measured 67.6x) and 2 / 68.6 for
    # ResNet-20. The selection rule is the only difference from the IWP row.
    if has_model lenet_fashion; then
      iwp_run lenet_fashion 64 4 "$seed" "RANDOMK, same bytes" RANDOMK "density: 0.0296" "iwp_param.leader:"
      # Two candidate causes of random coordinates scoring higher at half these bytes
      # (docs/iwp.md, "Random coordinates at the same bytes"): the rate limit, which
      # holds back more of a value the longer it waited, and the solver's momentum
      # going on applying each delayed sum (DGC's correction keeps velocity locally).
      iwp_run lenet_fashion 64 4 "$seed" "RANDOMK, same bytes, no rate limit" RANDOMK \
        "density: 0.0296" "iwp_param.leader:" "max_relative_step: 0"
      iwp_run lenet_fashion 64 4 "$seed" "RANDOMK, same bytes, momentum correction" RANDOMK \
        "density: 0.0296" "iwp_param.leader:" "momentum_correction: true"
    fi
    if has_model resnet20_fashion; then
      iwp_run resnet20_fashion 64 4 "$seed" "RANDOMK, same bytes" RANDOMK "density: 0.0292"
    fi
    # The same at the stretch rows' bytes (IWP at density / 2: 134.5x on LeNet, 131.6x
    # on ResNet-20), where the selection has half the coordinates to spend.
    if has_model lenet_fashion; then
      iwp_run lenet_fashion 64 4 "$seed" "RANDOMK, same bytes as density / 2" RANDOMK \
        "density: 0.0149" "iwp_param.leader:"
    fi
    if has_model resnet20_fashion; then
      iwp_run resnet20_fashion 64 4 "$seed" "RANDOMK, same bytes as density / 2" RANDOMK \
        "density: 0.0152"
    fi
    if has_model resnet20_fashion; then
      iwp_run resnet20_fashion 64 4 "$seed" "POWERSGD rank 2, FP16" POWERSGD \
        "powersgd_param.rank: 2" "max_relative_step:"
      iwp_run resnet20_fashion 64 4 "$seed" "SCALECOM, beta 1" SCALECOM "scalecom_param.beta: 1"
    fi
  done
fi

# settings_args: --settings MODEL=<the sync_param block of its first IWP run, as it ran>.
settings_args=()
add_settings() {
  local file
  file="$runs/$(run_name "$1" IWP 4 "$2").prototxt"
  [[ -f $file ]] || return 0
  settings_args+=(--settings "$1=$(sed -n 's/.*\(sync_param {.*\)/\1/p' "$file")")
}
for model in "${models[@]}"; do add_settings "$model" "${seeds[0]}"; done
if part batchnorm; then add_settings lenet_fashion_bn "${batchnorm_seeds[0]}"; fi

# Plots of a report without the main part are named apart, so they do not replace the
# main part's plots of the same net.
plot_tag=""
part main || plot_tag=$(IFS=-; echo "${parts[*]}")
plot_tag=${PLOT_TAG:-$plot_tag}

overrides=""
for var in PARTS MODELS SEEDS STRETCH_SEEDS ROBUST_SEEDS ROBUST_CELLS ABLATION_SEEDS METHOD_SEEDS INT8_SEEDS INT8_FACTORS \
    BATCHNORM_SEEDS \
    FINISHED_ONLY ONLY_LABEL PLOT_TAG; do
  [[ -n ${!var+set} ]] && overrides+="$var=\"${!var}\" "
done
python3 "$repo/scripts/repro_report.py" --manifest "$manifest" --out "$out" \
  --title "IWP at full length: the shipped solvers against DENSE from the same files" \
  --note "Every run is a shipped models/<net>/solver_iwp.prototxt (LeNet: 3000 iterations, ResNet-20: 4000, both at 4 ranks x batch 64 = 256 per step unless the row says otherwise) with the seed and at most the fields its label names changed; DENSE is the same file with method: DENSE. Top-1 on the whole 10k test set after the last iteration; the seeds column lists the seeds of each row. Model names with _b16 ran at batch 16 per rank. Machine: $(nproc) cores, $(uname -m), ranks oversubscribed under mpirun --oversubscribe. Generated $(date -u +%Y-%m-%d)." \
  "${settings_args[@]}" --merge --plot-tag "$plot_tag" \
  --command "${overrides}scripts/reproduce_fashion.sh --iwp-full${out_arg:+ --out $out_arg}" \
  --curve-ranks 4
echo "reproduce_fashion --iwp-full: $count run(s) trained, $(( $(date +%s) - started )) s; see $out/TABLE.md"
