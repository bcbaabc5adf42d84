#!/usr/bin/env bash
# A whole session's cost of the sandbox (BENCH.md, "Sandbox"), side by side with pi 1.6: a
# scripted model (agent-lsp-mock on loopback) calls `bash` five times in a row in CHECKOUT —
# `git status`, `git log`, a `find` and a `grep -r` over its Rust files, `ls` — then answers,
# and each client's whole session is timed (wall, from start to exit):
#
#   agent-lsp, jail           agent-lsp run --json --approve all --no-session (default sandbox)
#   agent-lsp, no namespaces  the same with AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES=1 (Landlock, seccomp)
#   agent-lsp, off            the same with --sandbox off
#   pi 1.6                    pi --mode json --no-session (its bash is unsandboxed)
#
#   scripts/bench-sandbox-session.sh [CHECKOUT]    CHECKOUT: a git checkout (default: this one)
#   BENCH_REPS=9 scripts/bench-sandbox-session.sh /var/tmp/deno
#   BENCH_NO_PI=1 scripts/bench-sandbox-session.sh
#
# BENCH_REPS repetitions (default 5) of every client, side by side (the order rotates each
# repetition), reported as the median and the range. Every session is checked: the five tool
# results are what the commands print run directly in CHECKOUT, the run settles, agent-lsp's
# results carry the sandbox it ran in, and the mock served all six answers; a broken session
# fails the script instead of reporting numbers. Binaries: $AGENT_LSP_BIN and $AGENT_LSP_MOCK_BIN,
# else the release builds (`cargo build --release`). pi is installed on first use by
# scripts/pi-env.sh (/var/tmp/agent-lsp-e2e/pi); every client runs with HOME, XDG dirs, pi's
# agent dir and TMPDIR in a temp dir, PI_OFFLINE=1, and touches only loopback. Needs jq.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CHECKOUT="$(realpath "${1:-$ROOT}")"
REPS="${BENCH_REPS:-5}"
COMMANDS=(
    "git status --short | wc -l"
    "git log --oneline -20 | wc -l"
    "find . -name '*.rs' -not -path './.git/*' | wc -l"
    "grep -rl --include='*.rs' 'fn main' . | wc -l"
    "ls"
)

die() { echo "bench-sandbox-session: $*" >&2; exit 1; }
command -v jq >/dev/null || die "jq is not installed"
git -C "$CHECKOUT" rev-parse --git-dir >/dev/null 2>&1 || die "$CHECKOUT is not a git checkout"

if [[ -z "${AGENT_LSP_BIN:-}" || -z "${AGENT_LSP_MOCK_BIN:-}" ]]; then
    (cd "$ROOT" && cargo build --quiet --release --locked --bin agent-lsp --bin agent-lsp-mock) \
        || die "cargo build --release failed"
    AGENT_LSP_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/agent-lsp"
    AGENT_LSP_MOCK_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/agent-lsp-mock"
fi

CLIENTS=(jail flat off)
if [[ -n "${BENCH_NO_PI:-}" ]]; then
    echo "== pi: not run (BENCH_NO_PI is set)"
else
    source "$ROOT/scripts/pi-env.sh"
    if install_pi; then
        CLIENTS+=(pi)
        echo "== pi $PI_VERSION: $PI_CLI (node $("$PI_NODE" --version))"
    else
        echo "== pi: cannot install it ($PI_FAILURE); timing agent-lsp alone"
    fi
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/bench-sandbox-session.XXXXXX")"
MOCK_PID=""
MOCK_IN=""
stop_mock() {
    [[ -n "$MOCK_IN" ]] && eval "exec $MOCK_IN>&-"
    if [[ -n "$MOCK_PID" ]]; then
        wait "$MOCK_PID" 2>/dev/null || true
    fi
    MOCK_IN="" MOCK_PID=""
}
trap 'stop_mock; rm -rf "$WORK"' EXIT

# The model's script: one `bash` call per answer, then the text.
jq -n '$ARGS.positional
    | {responses: ([to_entries[] | {toolCalls: [{id: "call_\(.key)", name: "bash",
                                                 arguments: {command: .value}}]}]
                   + [{text: "Done."}])}' \
    --args "${COMMANDS[@]}" >"$WORK/script.json"

# What each command prints run directly (trailing newlines aside: agent-lsp trims them).
for command in "${COMMANDS[@]}"; do
    (cd "$CHECKOUT" && bash -c "$command") </dev/null
    printf '\0'
done >"$WORK/expected.bin"
jq -Rs 'split("\u0000")[:-1] | map(sub("\n+$"; ""))' <"$WORK/expected.bin" >"$WORK/expected.json"

# Starts a fresh mock for one session (its stdin is our pipe: closing it stops the mock).
start_mock() {
    rm -f "$WORK/requests.jsonl"
    coproc MOCK { exec "$AGENT_LSP_MOCK_BIN" --script "$WORK/script.json" --log "$WORK/requests.jsonl"; }
    MOCK_IN="${MOCK[1]}"
    local line
    read -r -u "${MOCK[0]}" line || die "agent-lsp-mock printed no announcement"
    BASE_URL="$(jq -r .openaiBaseUrl <<<"$line")"
}

# The sealed environment of one session: provider `mock` (OpenAI Chat Completions) at the mock
# in both agent-lsp's and pi's models.json.
session_env() {
    local home="$WORK/home"
    rm -rf "$home" && mkdir -p "$home/config/agent-lsp" "$home/pi-agent" "$home/tmp"
    jq -n --arg url "$BASE_URL" '{providers: {mock: {baseUrl: $url, api: "openai-completions",
        apiKey: "bench-key", models: [{id: "mock-model", name: "Mock",
        contextWindow: 1047576, maxTokens: 32768}]}}}' \
        | tee "$home/config/agent-lsp/models.json" >"$home/pi-agent/models.json"
    ENV=(
        "PATH=${PI_NODE:+$(dirname "$PI_NODE"):}/usr/local/bin:/usr/bin:/bin"
        "HOME=$home" "XDG_DATA_HOME=$home/data" "XDG_CONFIG_HOME=$home/config"
        "XDG_CACHE_HOME=$home/cache" "XDG_STATE_HOME=$home/state" "TMPDIR=$home/tmp"
        "OLLAMA_HOST=127.0.0.1:9" "PI_CODING_AGENT_DIR=$home/pi-agent" "PI_OFFLINE=1"
    )
}

# Runs one session of `client`; its wall time in ms in SESSION_MS.
session() {
    local client="$1" cmd=() extra_env=()
    case "$client" in
        jail) cmd=("$AGENT_LSP_BIN" run --json --approve all --no-session --model mock/mock-model) ;;
        flat)
            cmd=("$AGENT_LSP_BIN" run --json --approve all --no-session --model mock/mock-model)
            extra_env=(AGENT_LSP_TEST_SANDBOX_NO_NAMESPACES=1)
            ;;
        off) cmd=("$AGENT_LSP_BIN" run --json --approve all --no-session --model mock/mock-model --sandbox off) ;;
        pi) cmd=("$PI_NODE" "$PI_CLI" --provider mock --model mock-model --mode json --no-session) ;;
    esac
    start_mock
    session_env
    local out="$WORK/out.jsonl" err="$WORK/err.txt" started ended status=0
    started=$EPOCHREALTIME
    (cd "$CHECKOUT" && exec env -i "${ENV[@]}" "${extra_env[@]}" "${cmd[@]}" "Run the five commands.") \
        </dev/null >"$out" 2>"$err" || status=$?
    ended=$EPOCHREALTIME
    stop_mock
    check "$client" "$status"
    SESSION_MS="$(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.1f", (b - a) * 1000 }')"
}

# Fails the script unless the session did what was scripted.
check() {
    local client="$1" status="$2" out="$WORK/out.jsonl" err="$WORK/err.txt" why=""
    [[ "$status" == 0 ]] || why="exited $status"
    local requests
    requests="$(wc -l <"$WORK/requests.jsonl" 2>/dev/null || echo 0)"
    [[ -n "$why" || "$requests" == 6 ]] || why="the mock served $requests requests, not 6"
    if [[ -z "$why" ]]; then
        # The sandbox agent-lsp's results say they ran in (pi's say nothing of it).
        local mode=null
        [[ "$client" == jail || "$client" == flat ]] && mode='"workspaceWrite"'
        [[ "$client" == pi ]] && mode='"any"'
        why="$(jq -rs --slurpfile expected "$WORK/expected.json" --argjson mode "$mode" '
            [.[] | select(.type == "tool_execution_end")] as $ends
            | if (.[-1] | .type != "agent_settled" or .aborted != false) then "the run did not settle"
              elif ($ends | length) != 5 then "\($ends | length) tool results, not 5"
              elif ([$ends[] | .result.content[0].text | sub("\n+$"; "")]) != $expected[0]
                then "tool results \([$ends[] | .result.content[0].text]) differ from \($expected[0])"
              elif any($ends[]; .isError) then "a tool result is an error"
              elif $mode != "any" and any($ends[]; .result.details.sandbox.mode != $mode)
                then "a result ran in sandbox \([$ends[] | .result.details.sandbox.mode]), not \($mode)"
              else "" end' "$out")" || why="its output is not JSON lines"
    fi
    if [[ -z "$why" && "$client" == flat ]] && ! grep -q "no namespaces (forced by" "$err"; then
        why="it did not say it ran without namespaces"
    fi
    if [[ -z "$why" && "$client" == jail ]] && grep -q "no namespaces" "$err"; then
        why="it ran without namespaces: $(cat "$err")"
    fi
    [[ -z "$why" ]] || die "$client's session failed: $why
stderr: $(tail -c 2000 "$err")"
}

median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f %.1f %.1f\n", m, v[1], v[NR] }'; }

echo "== a session of 5 bash calls in $CHECKOUT ($(git -C "$CHECKOUT" ls-files | wc -l) tracked files)," \
    "$REPS repetitions, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
declare -A TIMES
for ((rep = 0; rep <= REPS; rep++)); do
    n=${#CLIENTS[@]}
    for ((k = 0; k < n; k++)); do
        client="${CLIENTS[$(((rep + k) % n))]}"
        session "$client"
        # Repetition 0 warms the page cache and the binaries; it is not counted.
        ((rep == 0)) || TIMES[$client]+="$SESSION_MS "
    done
done

declare -A NAME=(
    [jail]="agent-lsp, jail (default)"
    [flat]="agent-lsp, no namespaces"
    [off]="agent-lsp, --sandbox off"
    [pi]="pi ${PI_VERSION:-} (bash unsandboxed)"
)
read -r off_median _ _ < <(tr ' ' '\n' <<<"${TIMES[off]}" | grep . | median)
printf '\n| %-34s | %12s | %15s | %18s | %12s |\n' client "median (ms)" "range (ms)" "above off (ms)" "per command"
printf '|%s|%s:|%s:|%s:|%s:|\n' "$(printf -- '-%.0s' {1..36})" "$(printf -- '-%.0s' {1..13})" \
    "$(printf -- '-%.0s' {1..16})" "$(printf -- '-%.0s' {1..19})" "$(printf -- '-%.0s' {1..13})"
for client in "${CLIENTS[@]}"; do
    read -r med lo hi < <(tr ' ' '\n' <<<"${TIMES[$client]}" | grep . | median)
    above="$(awk -v a="$med" -v b="$off_median" 'BEGIN { printf "%+.1f", a - b }')"
    per="$(awk -v a="$med" -v b="$off_median" -v n="${#COMMANDS[@]}" 'BEGIN { printf "%+.1f", (a - b) / n }')"
    # (The range's dash is 3 bytes and printf pads bytes.)
    printf '| %-34s | %12s | %17s | %18s | %12s |\n' "${NAME[$client]}" "$med" "$lo–$hi" "$above" "$per"
done
echo
echo "(wall of the whole session, start to exit; every run: $(tr ' ' '\n' <<<"${TIMES[jail]}" | grep -c .) per client)"
for client in "${CLIENTS[@]}"; do
    echo "  $client: ${TIMES[$client]}"
done
