# irglow — two commands on a fresh machine: `make run` and `make test`.
# Both create .venv and install what they need on first use.
PYTHON ?= python3
comma  := ,
VENV   ?= .venv
BIN    := $(VENV)/bin
# CPU wheel by default; CUDA users: make run TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128"
TORCH  ?= torch==2.13.0
# the extras installed: the test tools, the optional backends whose tests CI runs (PyTerrier, int8) and the docs
# site's tools (its build and tutorial are tested), so that a
# newcomer's `make test` runs every test CI runs; `make run EXTRAS=test` installs less.  One stamp per set.
EXTRAS ?= test,pyterrier,int8,docs
STAMP  := $(VENV)/.irglow-installed-$(subst $(comma),-,$(EXTRAS))
export PYTHONUNBUFFERED := 1
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

DATA  ?= ../shared/data/scifact
SPLIT ?= test
OUT   ?= out/bench
TRAIN ?= ../shared/data/scifact
TRAIN_SPLIT ?= train
TEST  ?= ../shared/data/scifact
TEST_SPLIT ?= test
MODEL ?=
VARIANTS ?=

.PHONY: venv browser docs docs-serve readme-check bench-gpu bench-msmarco-scale bench-glow-encode bench-search-start bench-zero-shot-fusion bench-report run test test-fast regressions run-msmarco zero-shot bench-lexical bench-twbert bench-twbert-diagnose bench-glow bench-rerank bench-best bench-scale bench-eval bench-speed clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e ".[$(EXTRAS)]"
	touch $@

venv: $(STAMP)

run: venv
	$(BIN)/irglow run --config configs/demo.toml

# The documentation site (mkdocs.yml): built into site/ with every warning an error (a broken link, a missing
# page), offline; the settings, command-line, API and reproduction pages generated from the code at build time.
export NO_MKDOCS_2_WARNING := 1
export DISABLE_MKDOCS_2_WARNING := true
docs: venv
	IRGLOW_DOCS_EXECUTE=1 $(BIN)/mkdocs build --strict

docs-serve: venv
	$(BIN)/mkdocs serve

# The README's table of what `make run` printed against the demo's results.md (docs/check_readme.py): fails naming
# every differing cell.  Not in `make test`: `make run` from scratch takes minutes.
readme-check: run
	$(BIN)/python docs/check_readme.py --readme README.md --results runs/demo/results.md

# Every test, slow ones included, on as many workers as cores (pytest-xdist; tests/conftest.py gives each worker
# one torch thread); `make test-fast` leaves out the tests marked slow (multi-process training, the miniature
# MS MARCO pipeline, the lexical reproduction matrix, the end-to-end runs over ~4 s) for the edit-test loop:
# about 75 s against 4-5 min on 2 cores.
test: venv browser
	$(BIN)/python -m pytest -q -n auto --dist loadscope --no-loadscope-reorder --durations=15 tests

test-fast: venv
	$(BIN)/python -m pytest -q -n auto --dist loadscope --no-loadscope-reorder -m "not slow" tests

# The results browser's tests drive Debian's headless Chromium; installed here when missing and possible (root with
# apt-get), else those tests skip with one line saying how to enable them.
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium and chromium-driver for the browser tests (apt-get)"; \
	  (apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium chromium-driver >/dev/null 2>&1)) || \
	  echo "could not install chromium: the browser tests will skip"; \
	else echo "browser tests will skip: install chromium and chromium-driver (Debian: apt-get install chromium chromium-driver)"; fi

# The reproduction matrix (configs/regressions.yaml): every experiment, ✓/✗ per figure, non-zero on drift.
# TAGS=lexical runs the seconds-long part (also run by `make test`).
TAGS ?=
regressions: venv
	$(BIN)/irglow regressions $(if $(TAGS),--tags $(TAGS))

# SIZE=full (default): the whole collection; SIZE=small: configs/msmarco-small.toml, about an hour on one GPU.
# GPUS=N: N processes on this machine under torchrun (one per GPU, NCCL; gloo without GPUs), identical results;
# several machines: docs/scale.md, "Several GPUs and machines".
SIZE ?= full
GPUS ?= 1
run-msmarco: venv
	$(if $(filter-out 1,$(GPUS)),$(BIN)/torchrun --standalone --nproc_per_node $(GPUS) -m irglow,$(BIN)/irglow) \
	  run --config configs/msmarco$(if $(filter small,$(SIZE)),-small).toml

# Train once, evaluate on every collection of the config (offline: seed them, set IR_DATASETS_HOME).
# TRAIN=, TRAIN_SPLIT=, OUT= given on the command line override the config; COLLECTIONS=a,b,c too.
ZS_CONFIG ?= configs/zero-shot.toml
COLLECTIONS ?=
given = $(filter command line environment,$(origin $(1)))
zero-shot: venv
	$(BIN)/irglow -v zero-shot --config $(ZS_CONFIG) $(if $(call given,TRAIN),--train $(TRAIN)) \
	  $(if $(call given,TRAIN_SPLIT),--train-split $(TRAIN_SPLIT)) $(if $(COLLECTIONS),--collections $(COLLECTIONS)) \
	  $(if $(call given,OUT),-o $(OUT))

# Quality tables run through the pipeline (configs/bench/*.toml: stage cache, manifests, one report format);
# bench/ measures costs only.
bench-lexical: venv
	$(BIN)/irglow run --config configs/bench/lexical.toml --set collection.name=$(DATA) \
	  --set collection.test_split=$(SPLIT) --set output.dir=$(OUT)
	$(BIN)/python bench/lexical.py --data $(DATA) --split $(SPLIT) --out $(OUT)/speed

bench-twbert: venv
	$(BIN)/irglow run --config configs/bench/twbert.toml --set collection.name=$(TEST) --set collection.train=$(TRAIN) \
	  --set collection.train_split=$(TRAIN_SPLIT) --set collection.test_split=$(TEST_SPLIT) --set output.dir=$(OUT) \
	  $(if $(MODEL),--set twbert.model_dir=$(MODEL))

# TW-BERT training variants ([presets.*] of configs/bench/twbert-diagnose.toml; VARIANTS=a,b picks some): validation
# and training-query curves per preset, the test split once with the preset validation chose
bench-twbert-diagnose: venv
	$(BIN)/irglow run --config configs/bench/twbert-diagnose.toml --set collection.name=$(TRAIN) \
	  --set collection.train_split=$(TRAIN_SPLIT) --set collection.test_split=$(TEST_SPLIT) --set output.dir=$(OUT) \
	  --grid preset=$(if $(VARIANTS),$(VARIANTS),all) --select-on validation

# GLOW/BERT and the untrained checkpoint, hybrids with BM25F (configs/bench/glow.toml). ATTENTION=auto (default)
# chooses the attention side on validation; GRID="glow.model.weight_alpha=0.25,0.5,1 …" adds axes, chosen the same way.
ATTENTION ?= auto
GRID ?=
# a reused MODEL= carries its own attention side: nothing to choose
GLOW_ATTENTION = $(if $(MODEL),,$(if $(filter auto,$(ATTENTION)),--grid glow.model.attention=key$(comma)row,--set glow.model.attention=$(ATTENTION)))
# FUSE=twbert+glow,twbert+bert sets the hybrids ([fusion] runs); FUSE=none turns them off; with VARIANTS or
# MODELS given and no FUSE, the config's hybrids are off (they may name a run the subset does not produce)
FUSION = $(if $(filter none,$(FUSE)),--set fusion.enabled=false,$(if $(FUSE),--set fusion.runs=$(FUSE),$(if $(or $(VARIANTS),$(MODELS)),--set fusion.enabled=false)))

bench-glow: venv
	$(BIN)/irglow run --config configs/bench/glow.toml --set collection.name=$(TEST) --set collection.train=$(TRAIN) \
	  --set collection.train_split=$(TRAIN_SPLIT) --set collection.test_split=$(TEST_SPLIT) --set output.dir=$(OUT) \
	  $(if $(MODEL),--set glow.model_dir=$(MODEL)) $(if $(VARIANTS),--set glow.variants=$(VARIANTS)) \
	  $(GLOW_ATTENTION) $(foreach g,$(GRID),--grid $(g)) $(if $(or $(GRID),$(filter --grid%,$(GLOW_ATTENTION))),--select-on validation) \
	  $(FUSION)
	$(BIN)/python bench/glow.py --models $(if $(MODEL),$(MODEL),$(OUT)) --data $(TEST) --out $(OUT)/throughput

bench-rerank: venv
	$(BIN)/irglow run --config configs/bench/rerank.toml --set collection.name=$(TEST) --set collection.train=$(TRAIN) \
	  --set collection.train_split=$(TRAIN_SPLIT) --set collection.test_split=$(TEST_SPLIT) --set output.dir=$(OUT) \
	  $(if $(MODEL),--set rerank.model_dir=$(MODEL)) $(if $(MODELS),--set rerank.models=$(MODELS)) \
	  $(if $(DEPTH),--set rerank.depth=$(DEPTH)) $(if $(FIRST),--set rerank.first_stage=$(FIRST)) $(FUSION)

# The strongest pipeline (configs/bench/best.toml): BM25/BM25F, TW-BERT, GLOW and the untrained checkpoint,
# monoBERT over BM25 and monoBERT/NRM-F over TW-BERT, the hybrids and `all` (every run fused). VALIDATE_ALSO=
# <collection>@<split> (e.g. ../shared/data/nfcorpus@train) adds that source's held-out queries to the neural
# models' checkpoint choice (VALIDATION_STAGES=glow: GLOW's only); MODELS= picks re-rankers; FUSE= as above;
# SET="glow.enabled=false glow.mix_checkpoint=[0.25,0.5]" passes any other setting (--set each).
VALIDATE_ALSO ?=
VALIDATION_STAGES ?=
SET ?=
bench-best: venv
	$(BIN)/irglow run --config configs/bench/best.toml --set collection.name=$(TEST) --set collection.train=$(TRAIN) \
	  --set collection.train_split=$(TRAIN_SPLIT) --set collection.test_split=$(TEST_SPLIT) --set output.dir=$(OUT) \
	  $(if $(VALIDATE_ALSO),--set validation.also=$(VALIDATE_ALSO)) $(if $(VALIDATION_STAGES),--set validation.stages=$(VALIDATION_STAGES)) \
	  $(if $(MODELS),--set rerank.models=$(MODELS)) $(FUSION) $(foreach s,$(SET),--set $(s))

# The results browser at MS MARCO size: 10 runs × 7,000 queries × top 10, opened in headless Chromium
# Zero-shot fusion without judgments (bench/zero_shot_fusion.py): DATA/SPLIT evaluated, weights carried from
# TRAIN/TRAIN_SPLIT; e.g. make bench-zero-shot-fusion DATA=../shared/data/nfcorpus SPLIT=dev TRAIN=../shared/data/scifact
bench-zero-shot-fusion: venv
	$(BIN)/python bench/zero_shot_fusion.py --data $(DATA) --split $(SPLIT) --out $(OUT)/zero-shot-fusion/eval \
	  --tune-data $(TRAIN) --tune-split $(TRAIN_SPLIT) --tune-out $(OUT)/zero-shot-fusion/tune

bench-report: venv browser
	$(BIN)/python bench/report_open.py --out $(if $(call given,OUT),$(OUT),out/report-open)

# Evaluation at MS MARCO scale: generated runs (RUNS × 7,000 queries × 1,000 documents), irglow eval and
# compare against ir_measures alone, peak memory
RUNS ?= 10
bench-eval: venv
	$(BIN)/python bench/eval.py --runs $(RUNS) --out $(if $(call given,OUT),$(OUT),out/bench-eval)

# The cost table (bench/speed.py, issue 40): BM25 against Lucene alone and Pyserini, irglow eval against
# ir_measures, MiniLM encoding and monoBERT re-ranking in fp32 and int8 against bare forward passes; interleaved
# rounds, medians.  The int8 rows need the int8 extra, installed here.
bench-speed: venv
	$(BIN)/pip install -q -e ".[int8]"
	$(BIN)/python bench/speed.py --data $(DATA) --split $(SPLIT) --out $(if $(call given,OUT),$(OUT),out/speed)

# How costs grow: demo collections of SIZES documents (lexical + faiss at all sizes, encoding up to NEURAL_MAX,
# HNSW build up to HNSW_MAX when given)
SIZES ?= 10000,100000,1000000
NEURAL_MAX ?= 100000
bench-scale: venv
	$(BIN)/python bench/scale.py --sizes $(SIZES) --neural-max $(NEURAL_MAX) $(if $(HNSW_MAX),--hnsw-max $(HNSW_MAX)) --out $(if $(call given,OUT),$(OUT),out/scale)

# The real job's stages at MS MARCO document shape (bench/msmarco_scale.py): generated collections of SCALE_SIZES
# documents, each corpus-touching stage in its own process, time and peak memory per stage, growth exponents
SCALE_SIZES ?= 100000,300000,1000000
# PROCESSES=1,2: the splitting stages (encoding, re-ranking) also under torchrun with 2 processes, with the speed-up
PROCESSES ?= 1
bench-msmarco-scale: venv
	$(BIN)/python bench/msmarco_scale.py --sizes $(SCALE_SIZES) --processes $(PROCESSES) --out $(if $(call given,OUT),$(OUT),out/msmarco-scale)

# A lexical command's start (issue 70): `irglow search` of 10 queries in fresh processes, with and without the JVM's
# start-up cache, on generated MS MARCO-shaped collections of START_SIZES documents (or DATA=<BEIR folder or id>)
START_SIZES ?= 10000,100000
bench-search-start: venv
	$(BIN)/python bench/search_start.py $(if $(call given,DATA),--collection $(DATA) --split $(SPLIT),--sizes $(START_SIZES)) \
	  --out $(if $(call given,OUT),$(OUT),out/search-start)

# GLOW corpus encoding taken apart (issue 69): featurization alone, the model alone, end to end; the last line
# `featurization F docs/s per core; model M docs/s; end to end E docs/s` (DATA=<BEIR folder or ir_datasets id>,
# else DOCS MS MARCO-shaped documents, default 100000)
bench-glow-encode: venv
	$(BIN)/python bench/glow_encode.py $(if $(call given,DATA),--data $(DATA)) $(if $(call given,DOCS),--docs $(DOCS)) \
	  --out $(if $(call given,OUT),$(OUT),out/glow-encode)

# On a GPU machine (the device tool): MiniLM encoding of 200,000 generated documents in fp16, the demo's trainers
# with AMP on the GPU (steps/s, peak GPU memory) and tests/gpu, in one script under 8 minutes (bench/gpu.py).
GPU_DOCS ?= 200000
bench-gpu: venv
	$(BIN)/python bench/gpu.py --docs $(GPU_DOCS) --out $(if $(call given,OUT),$(OUT),out/gpu)

clean:
	rm -rf $(VENV) data out
