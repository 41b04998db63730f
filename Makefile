# kproto: two commands do all set-up on a fresh Debian machine.
#   make serve   the reference broker on 127.0.0.1:9092, data in ./kproto-data
#   make test    installs what the tests need (Debian packages included), runs pytest
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
# Debian packages the tests drive for real: kcat (librdkafka 2.0.2), ZooKeeper, tshark, tcpdump.
DEB_PKGS := kcat zookeeper tshark tcpdump
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: serve test bench deps debs venv clean

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

# As Kafka's shipped config/server.properties: no initial rebalance delay for
# development (the code default, 3 s, suits production).
serve: venv
	$(BIN)/kproto serve --listen 127.0.0.1:9092 --data-dir ./kproto-data \
	  --config group.initial.rebalance.delay.ms=0

test: deps
	$(BIN)/python -m pytest -q

# Each benchmark runs kproto and its named peer side by side and prints ratios.
BENCHES := bench_records bench_dumplog bench_broker bench_topics bench_groups

bench: venv debs
	@for b in $(BENCHES); do echo "== $$b"; $(BIN)/python bench/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
