# The two commands of the README: `make demo` (install what is needed, analyze a sample capture)
# and `make test` (the whole test suite; .ci/run runs it).

SAMPLE ?= testdata/sample.pcap
APT_PACKAGES := libpcap-dev tshark tcpdump tcpreplay chromium tmux prometheus zsh fish
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps pydeps demo test build sample-report testdata fuzz-check install install-files uninstall

# Debian packages: libpcap (live capture), tshark (the agreement tests), tcpdump and tcpreplay
# (live tests), chromium (the headless screenshot of the HTML report), tmux (the terminal the live
# view is tested in), prometheus (the server that scrapes --metrics in the tests), zsh and fish
# (the installed completion scripts are loaded by them in the tests), and a Java runtime when there
# is no `java` (Spark, which reads the Parquet back in the tests, runs on it: Debian 12's
# openjdk-17-jre-headless, else the distribution's default). Installed only when missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if ! command -v java >/dev/null; then \
	  if apt-cache show openjdk-17-jre-headless >/dev/null 2>&1; then missing="$$missing openjdk-17-jre-headless"; \
	  else missing="$$missing default-jre-headless"; fi; fi; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs"; exit 1; }

# Python packages the Parquet tests read the export back with: DuckDB, and Spark in local mode
# (pyspark; it needs Java 17). Installed only when missing.
pydeps:
	@python3 -c "import duckdb, pyspark" 2>/dev/null || python3 -m pip install -q duckdb pyspark

build: deps
	cargo build --release

demo: build
	./target/release/roce-sniff -r $(SAMPLE)

test: deps pydeps fuzz-check
	cargo test --workspace --all-targets

# The fuzz targets (parsers/fuzz, a workspace of its own that `cargo fuzz` builds with its own
# flags) must keep compiling as the code they call changes: checked on the way to the tests.
# Run one with `RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir parsers/fuzz -O TARGET` (cargo-fuzz
# wants a nightly compiler's flags; RUSTC_BOOTSTRAP lets the stable one take them).
fuzz-check:
	cargo check --manifest-path parsers/fuzz/Cargo.toml --bins --locked

# The committed sample report and correlation page (README shows them).
sample-report: build
	rm -rf reports/sample reports/correlation-sample
	./target/release/roce-sniff -r testdata/sample.pcap --report=reports/sample > /dev/null
	./target/release/roce-sniff --correlate -r testdata/correlate/leaf.pcap -r testdata/correlate/spine.pcap \
	  -r testdata/correlate/receiver.pcap --report=reports/correlation-sample > /dev/null

# Rewrite the crafted captures of testdata/ from the generator.
testdata:
	cargo run --release -p roce-testgen --bin gen-testdata

# `make install` (PREFIX=/usr/local, DESTDIR honoured): the binary, its man page and the bash,
# zsh and fish completions, the last three made by the binary itself (`--generate`) from its
# option definitions. It needs libpcap-dev to build; `cargo install --path .` is the other way
# (the binary alone).
PREFIX ?= /usr/local
BIN ?= target/release/roce-sniff
INSTALLED := bin/roce-sniff share/man/man1/roce-sniff.1 \
	share/bash-completion/completions/roce-sniff share/zsh/site-functions/_roce-sniff \
	share/fish/vendor_completions.d/roce-sniff.fish

install:
	@dpkg -s libpcap-dev >/dev/null 2>&1 || [ -e /usr/include/pcap.h ] || \
	  { echo "libpcap-dev is missing: apt-get install libpcap-dev (or make deps)"; exit 1; }
	cargo build --release --bin roce-sniff
	$(MAKE) --no-print-directory install-files BIN=target/release/roce-sniff

# The installation of an already built BIN (the tests install the test build this way).
install-files:
	@set -e; root="$(DESTDIR)$(PREFIX)"; \
	install -d "$$root/bin" "$$root/share/man/man1" "$$root/share/bash-completion/completions" \
	  "$$root/share/zsh/site-functions" "$$root/share/fish/vendor_completions.d"; \
	install -m 755 "$(BIN)" "$$root/bin/roce-sniff"; \
	"$(BIN)" --generate man > "$$root/share/man/man1/roce-sniff.1"; \
	"$(BIN)" --generate complete-bash > "$$root/share/bash-completion/completions/roce-sniff"; \
	"$(BIN)" --generate complete-zsh > "$$root/share/zsh/site-functions/_roce-sniff"; \
	"$(BIN)" --generate complete-fish > "$$root/share/fish/vendor_completions.d/roce-sniff.fish"; \
	echo "installed roce-sniff, its man page and its bash, zsh and fish completions under $$root"

uninstall:
	cd "$(DESTDIR)$(PREFIX)" && rm -f $(INSTALLED)
