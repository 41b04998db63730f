# kproto: two commands do all set-up on a fresh Debian machine.
#   make serve   the reference broker on 127.0.0.1:9092, data in ./kproto-data
#   make test    installs what the tests need (Debian packages included), runs pytest
#   make soak    bench/soak.py: kill -9, mutated frames, fuzzing, group churn; figures in soak-figures.json;
#                then SOAK_KILLS=50 random node kills of a 3-node cluster (tests/e2e/test_cluster_chaos.py)
#   make c       regenerate the C record codec from the schema (generators/c.py) and rebuild it
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
# Debian packages the tests drive for real: kcat (librdkafka 2.0.2), ZooKeeper, tshark, tcpdump
# (and GNU time, for bench_decode's peak RSS; mount's losetup and e2fsprogs' mkfs.ext4 for
# the ext4 that fails under a running broker in test_broker_faults);
# Maven, which fetches Apache Kafka for the parity tests (make kafka);
# a Java runtime for Spark (kproto.spark), ZooKeeper and Kafka, unless `java` is already there.
DEB_PKGS := kcat zookeeper tshark tcpdump time mount e2fsprogs maven $(if $(shell command -v java),,default-jre-headless)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: serve test bench deps debs venv clean lint kafka schema-registry c

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

debs:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

deps: venv debs

# Apache Kafka itself (tests/kafka/pom.xml, version there) for the parity tests:
# Maven copies its jars into .kafka/<version>/lib once; later runs find them there.
# 4.0.2 too: tests/parity/test_kafka_parity_versions.py measures the --kafka-version 4.0
# table against that release's broker.
kafka: debs
	$(PY) tests/kafka_ref.py fetch
	$(PY) tests/kafka_ref.py fetch 4.0.2

# A Confluent-compatible Schema Registry (Apicurio Registry, tests/schema_registry/pom.xml) for the
# console tools' registry formats: Maven builds it into .schema-registry/<version> once.
schema-registry: debs
	$(PY) tests/schema_registry.py fetch

# As Kafka's shipped config/server.properties: no initial rebalance delay for
# development (the code default, 3 s, suits production).
serve: venv
	$(BIN)/kproto serve --listen 127.0.0.1:9092 --data-dir ./kproto-data \
	  --config group.initial.rebalance.delay.ms=0

# The record and protocol modules run a second time on the pure-Python path
# (KPROTO_NO_EXTENSIONS=1), as on a machine that installed kproto without a C compiler.
# The Spark tests run twice: local[2] with the rest, then against a standalone
# Master + Worker on loopback (tasks in executors of their own).
PURE_TESTS := tests/records/test_records.py tests/records/test_records_bad_input.py tests/records/test_codegen_c.py \
	tests/records/test_compression.py tests/schemas/test_protocol_*.py tests/parity/test_protocol_*.py tests/tools/test_dump_log.py

# The fixtures' own checks first: third-party readers agree with each fixture's
# JSON (check_fixtures.py), and regenerating them changes no byte (--verify).
FIXTURE_CHECKS = $(wildcard tests/fixtures/check_fixtures.py tests/fixtures/*/check_fixtures.py)
FIXTURE_MAKERS = $(wildcard tests/fixtures/make_fixtures.py tests/fixtures/*/make_fixtures.py)

# The shape, checked before any test runs: pyflakes' checks through ruff, and the
# layering contracts of pyproject.toml through import-linter.
lint: venv
	$(BIN)/ruff check kproto tests bench
	$(BIN)/lint-imports

test: deps lint kafka schema-registry
	@for f in $(FIXTURE_CHECKS); do echo "== $$f"; $(BIN)/python $$f || exit 1; done
	@for f in $(FIXTURE_MAKERS); do echo "== $$f --verify"; $(BIN)/python $$f --verify || exit 1; done
	$(BIN)/python -m pytest -q
	KPROTO_NO_EXTENSIONS=1 $(BIN)/python -m pytest -q $(PURE_TESTS)
	KPROTO_TEST_SPARK_MASTER=standalone $(BIN)/python -m pytest -q tests/spark/test_spark.py

# Each benchmark runs kproto and the strongest peer here side by side (>= 5 runs,
# alternating) and writes its table to bench/results/<bench>.md.
# `make bench BENCH_ARGS=--quick` checks the scripts with reduced sizes.
BENCHES := bench_records bench_dumplog bench_broker bench_topics bench_groups bench_decode bench_txn \
	bench_fixture bench_tls bench_protocol bench_consume bench_cluster
BENCH_ARGS ?=

bench: venv debs kafka
	@for b in $(BENCHES); do echo "== $$b"; $(BIN)/python bench/$$b.py $(BENCH_ARGS) || exit 1; done

# Hostile and careless clients for as long as you like (figures printed and kept
# in soak-figures.json); bench/soak.py --help sizes each part. Then the cluster chaos test:
# SOAK_KILLS random SIGKILLs and restarts of a 3-node cluster under load (the normal
# suite runs 3; SOAK_SEED replays a run). Default: ~35 min + ~10 min.
SOAK_KILLS ?= 50
soak: venv
	nice -n 10 $(BIN)/python bench/soak.py --out soak-figures.json
	SOAK_KILLS=$(SOAK_KILLS) nice -n 10 $(BIN)/python -m pytest -q -p no:cacheprovider tests/e2e/test_cluster_chaos.py

# The C record codec after a change to the record schema or generators/: regenerate
# csrc/records_generated.c (tests/records/test_codegen_c.py checks it is current) and rebuild.
c: venv
	$(BIN)/python -m generators.c
	$(BIN)/python setup.py build_ext --inplace -q

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
