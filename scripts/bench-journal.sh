#!/usr/bin/env bash
# What the effect journal (issue 31) costs a whole session, side by side with pi 1.6. A scripted
# model (agent-lsp-mock on loopback) makes one tool call per answer in CHECKOUT, then answers:
#
#   0 grep {pattern: "fn main", glob: "*.rs"}     3 read {path: TARGET}
#   1 find {pattern: "*.toml"}                    4 edit {path: TARGET, edits: [{oldText: OLD, newText: NEW}]}
#   2 bash "git status --short | wc -l"           5 bash "git diff --stat"          6 "Done."
#
# and each client's session is measured:
#
#   agent-lsp             agent-lsp run --json --approve all (sessions on: the journal; measured)
#   agent-lsp no-session  the same with --no-session (no journal)
#   pi 1.6                pi --mode json --tools read,bash,edit,write,grep,find,ls (sessions on)
#
#   scripts/bench-journal.sh [CHECKOUT...]   default: /var/tmp/agent-lsp-bench/repo-15k, generated
#                                            by benches/gen-repo.py (--files 15000 --mib 130)
#   BENCH_TARGET=cli/main.rs BENCH_OLD='  deno::main()' scripts/bench-journal.sh /var/tmp/deno
#   BENCH_REPS=9 BENCH_NO_PI=1 scripts/bench-journal.sh /var/tmp/agent-lsp-bench/repo-100k
#
# Per session: the wall time from start to exit; each step's cost from the mock's request log
# (step k = request k → request k+1, `elapsedMs`: the tool's run plus the client's own work on
# that turn); and the bytes the client's whole process tree wrote to storage (`write_bytes` of
# /proc/PID/io of a wrapper that is the tree's subreaper and reads it once every process of the
# tree was reaped: the kernel adds a reaped child's I/O to its parent's; checked once at the
# start). Beside them, the floor measured directly in CHECKOUT: the two bash commands (`git diff
# --stat` after the same edit), `rg` for the grep and `fd` for the find, as pi runs them.
#
# BENCH_REPS repetitions (default 5) of every client after one uncounted warm-up, the order
# rotating each repetition; median and range. Every session is checked (the run settles, six tool
# results in order, none an error, the bash results are what the commands print run directly, the
# read shows OLD, the edit is on disk, the mock served seven answers); a broken session fails the
# script. After every session TARGET is restored (`git checkout`), refs/agent-lsp/ refs the session
# made are deleted and `git status --porcelain` must be empty, so every session starts from the
# same clean tree. CHECKOUT must be clean to begin with.
#
# Binaries: $AGENT_LSP_BIN and $AGENT_LSP_MOCK_BIN, else the release builds (built if missing).
# pi, and rg and fd for pi's grep and find, are installed on first use by scripts/pi-env.sh
# (/var/tmp/agent-lsp-e2e/pi); BENCH_NO_PI=1 skips pi. Every client runs with HOME, the XDG dirs,
# pi's agent dir and TMPDIR in a temp dir, PI_OFFLINE=1, and touches only loopback. Needs jq, git,
# python3 (the measuring wrapper; and benches/gen-repo.py for the default checkout).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REPS="${BENCH_REPS:-5}"
TARGET="${BENCH_TARGET:-src/main.rs}"
OLD="${BENCH_OLD:-    run_server(config)}"
NEW="$OLD // bench"
DEFAULT_REPO=/var/tmp/agent-lsp-bench/repo-15k
PROMPT="Find the entry points and the manifests, then mark the server's start."
STATUS_CMD="git status --short | wc -l"
DIFF_CMD="git diff --stat"

die() { echo "bench-journal: $*" >&2; exit 1; }
command -v jq >/dev/null || die "jq is not installed"
command -v git >/dev/null || die "git is not installed"
command -v python3 >/dev/null || die "python3 is not installed"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "BENCH_REPS must be a positive integer, not '$REPS'"
[[ -n "$OLD" ]] || die "BENCH_OLD is empty"

# --- binaries, pi, rg and fd -----------------------------------------------------------------

RELEASE="${CARGO_TARGET_DIR:-$ROOT/target}/release"
if [[ -z "${AGENT_LSP_BIN:-}" || -z "${AGENT_LSP_MOCK_BIN:-}" ]]; then
    if [[ ! -x "$RELEASE/agent-lsp" || ! -x "$RELEASE/agent-lsp-mock" ]]; then
        (cd "$ROOT" && cargo build --quiet --release --locked --bin agent-lsp --bin agent-lsp-mock) \
            || die "cargo build --release failed"
    fi
    AGENT_LSP_BIN="${AGENT_LSP_BIN:-$RELEASE/agent-lsp}"
    AGENT_LSP_MOCK_BIN="${AGENT_LSP_MOCK_BIN:-$RELEASE/agent-lsp-mock}"
fi
[[ -x "$AGENT_LSP_BIN" ]] || die "no agent-lsp binary at $AGENT_LSP_BIN"
[[ -x "$AGENT_LSP_MOCK_BIN" ]] || die "no agent-lsp-mock binary at $AGENT_LSP_MOCK_BIN"

source "$ROOT/scripts/pi-env.sh"
# rg and fd serve pi's grep and find, and the floor of those two steps.
PI_TOOLS_BIN=""
if ! install_pi_search_tools; then
    echo "== rg and fd: not available ($PI_FAILURE); no floor for grep and find, and no pi"
    PI_TOOLS_BIN=""
fi
CLIENTS=(journal nojournal)
if [[ -n "${BENCH_NO_PI:-}" ]]; then
    echo "== pi: not run (BENCH_NO_PI is set)"
elif [[ -z "$PI_TOOLS_BIN" ]]; then
    echo "== pi: not run (its grep and find need rg and fd)"
elif install_pi; then
    CLIENTS+=(pi)
    echo "== pi $PI_VERSION: $PI_CLI (node $("$PI_NODE" --version)), rg and fd from $PI_TOOLS_BIN"
else
    echo "== pi: cannot install it ($PI_FAILURE); measuring agent-lsp alone"
fi
echo "== agent-lsp: $AGENT_LSP_BIN ($("$AGENT_LSP_BIN" --version 2>/dev/null || echo '?'))"

# --- the work dir, the mock, the restore on exit -----------------------------------------------

WORK="$(mktemp -d "${TMPDIR:-/tmp}/bench-journal.XXXXXX")"
MOCK_PID=""
MOCK_IN=""
CHECKOUT=""
stop_mock() {
    [[ -n "$MOCK_IN" ]] && eval "exec $MOCK_IN>&-"
    if [[ -n "$MOCK_PID" ]]; then
        wait "$MOCK_PID" 2>/dev/null || true
    fi
    MOCK_IN="" MOCK_PID=""
}
# Leaves the checkout as it was found even when a session breaks half-way.
on_exit() {
    stop_mock
    [[ -n "$CHECKOUT" ]] && restore_checkout quiet
    rm -rf "$WORK"
}
trap on_exit EXIT

# Starts a fresh mock for one session (its stdin is our pipe: closing it stops the mock).
start_mock() {
    rm -f "$WORK/requests.jsonl"
    coproc MOCK { exec "$AGENT_LSP_MOCK_BIN" --script "$WORK/script.json" --log "$WORK/requests.jsonl"; }
    MOCK_IN="${MOCK[1]}"
    local line
    read -r -u "${MOCK[0]}" line || die "agent-lsp-mock printed no announcement"
    BASE_URL="$(jq -r .openaiBaseUrl <<<"$line")"
}

# The sealed environment of one session: provider `mock` (OpenAI Chat Completions) at the mock in
# both agent-lsp's and pi's models.json; rg and fd on PATH (pi's grep and find; agent-lsp's are
# built in).
session_env() {
    local home="$WORK/home"
    rm -rf "$home" && mkdir -p "$home/config/agent-lsp" "$home/pi-agent" "$home/tmp"
    jq -n --arg url "$BASE_URL" '{providers: {mock: {baseUrl: $url, api: "openai-completions",
        apiKey: "bench-key", models: [{id: "mock-model", name: "Mock",
        contextWindow: 1047576, maxTokens: 32768}]}}}' \
        | tee "$home/config/agent-lsp/models.json" >"$home/pi-agent/models.json"
    ENV=(
        "PATH=${PI_NODE:+$(dirname "$PI_NODE"):}${PI_TOOLS_BIN:+$PI_TOOLS_BIN:}/usr/local/bin:/usr/bin:/bin"
        "HOME=$home" "XDG_DATA_HOME=$home/data" "XDG_CONFIG_HOME=$home/config"
        "XDG_CACHE_HOME=$home/cache" "XDG_STATE_HOME=$home/state" "TMPDIR=$home/tmp"
        "OLLAMA_HOST=127.0.0.1:9" "PI_CODING_AGENT_DIR=$home/pi-agent" "PI_OFFLINE=1"
    )
}

# The wrapper every client runs under (python3 -I -B measure.py CMD...): it becomes a child
# subreaper, runs CMD, and once CMD has exited reaps every process CMD left behind before it prints
# its own /proc/self/io and CMD's wall time to fd 3. The kernel adds a reaped child's I/O to its
# parent's, so write_bytes then covers the whole process tree, including processes whose parent
# did not wait for them: agent-lsp's sandbox launcher returns as soon as the jail's init reports
# the command's end, without reaping init, so under a plain `bash -c '"$@"; cat /proc/$$/io'`
# the sandboxed commands' writes would be lost (orphans go to the system's init).
cat >"$WORK/measure.py" <<'PY'
import ctypes, os, sys, time
PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    sys.exit("measure.py: prctl(PR_SET_CHILD_SUBREAPER) failed")
started = time.monotonic_ns()
pid = os.fork()
if pid == 0:
    try:
        os.close(3)
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status = os.waitpid(pid, 0)
wall_ns = time.monotonic_ns() - started
deadline = time.monotonic() + 10
while True:  # the orphans, reparented to us
    try:
        if os.waitpid(-1, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                sys.exit("measure.py: a process of the session is still running 10 s after it")
            time.sleep(0.001)
    except ChildProcessError:
        break
with open("/proc/self/io") as io:
    os.write(3, (f"wall_ms: {wall_ns / 1e6:.1f}\n" + io.read()).encode())
sys.exit(os.waitstatus_to_exitcode(status))
PY
measured() {
    awk -v key="$1:" '$1 == key { print $2 }' "$WORK/io.txt"
}

# The wrapper really sees the writes of an orphan: 4 MiB written by a process whose parent exited.
check_io_accounting() {
    # shellcheck disable=SC2016 # expanded by those shells
    python3 -I -B "$WORK/measure.py" sh -c \
        'sh -c "sleep 0.2; head -c 4194304 /dev/zero >\"\$1\"" sh "$1" & exit 0' sh "$WORK/io-probe" \
        3>"$WORK/io.txt" || die "the measuring wrapper failed"
    rm -f "$WORK/io-probe"
    local written
    written="$(measured write_bytes)"
    [[ -n "$written" ]] || die "no write_bytes in /proc/self/io (no task I/O accounting in this kernel?)"
    ((written >= 4194304)) \
        || die "write_bytes is $written after an orphan wrote 4 MiB: the wrapper cannot see a process tree's writes here"
}
check_io_accounting

# --- the checkout: checks, restore, floors ------------------------------------------------------

# Counts OLD in a file (jq: exact text, several lines allowed).
count_old() { jq -Rrs --arg old "$OLD" 'indices($old) | length' "$1"; }

# Applies the session's edit directly (OLD occurs once: checked before).
apply_edit() {
    jq -Rjs --arg old "$OLD" --arg new "$NEW" 'split($old) | join($new)' "$CHECKOUT/$TARGET" >"$WORK/edited"
    cat "$WORK/edited" >"$CHECKOUT/$TARGET"
}

# TARGET back as committed, the refs/agent-lsp/ refs a session made deleted (those there before
# the bench are left alone), and the tree clean again.
restore_checkout() {
    git -C "$CHECKOUT" checkout -q -- "$TARGET" || die "git checkout -- $TARGET failed in $CHECKOUT"
    # Git compares timestamps in whole seconds here: TARGET, rewritten in the second the index is,
    # would stay "racily clean" and the next `git status` would rewrite the whole index (1.8 MB in
    # the 15k-file repo) inside the next session. Dated 2 s back and refreshed, it starts every
    # session with a settled index, as a user's tree has.
    touch -d "@$(($(date +%s) - 2))" "$CHECKOUT/$TARGET"
    git -C "$CHECKOUT" update-index -q --refresh || true
    local ref
    while read -r ref; do
        [[ -z "$ref" ]] || grep -qxF "$ref" "$WORK/refs-before" || git -C "$CHECKOUT" update-ref -d "$ref"
    done < <(git -C "$CHECKOUT" for-each-ref --format='%(refname)' refs/agent-lsp/)
    [[ "${1:-}" == quiet ]] && return 0
    local dirty
    dirty="$(git -C "$CHECKOUT" status --porcelain)"
    [[ -z "$dirty" ]] || die "$CHECKOUT is not clean after restoring it:
$(head -20 <<<"$dirty")"
}

median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'; }

# The median wall time (ms) of a shell command run directly in CHECKOUT: 5 runs after one warm-up.
floor_ms() {
    local runs="" k started
    for ((k = 0; k <= 5; k++)); do
        started=$EPOCHREALTIME
        (cd "$CHECKOUT" && bash -c "$1") </dev/null >/dev/null 2>&1 || die "the floor command failed in $CHECKOUT: $1"
        ((k == 0)) || runs+="$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", (b - a) * 1000 }') "
    done
    tr ' ' '\n' <<<"$runs" | grep . | median | cut -d' ' -f1
}

# --- one session ---------------------------------------------------------------------------------

# Runs one session of `client`; sets SESSION_MS, STEPS (6 step costs in ms) and IO_WRITE_BYTES.
session() {
    local client="$1" cmd=()
    case "$client" in
        journal) cmd=("$AGENT_LSP_BIN" run --json --approve all --model mock/mock-model) ;;
        nojournal) cmd=("$AGENT_LSP_BIN" run --json --approve all --no-session --model mock/mock-model) ;;
        pi) cmd=("$PI_NODE" "$PI_CLI" --provider mock --model mock-model --mode json
                 --tools "read,bash,edit,write,grep,find,ls") ;;
    esac
    start_mock
    session_env
    local out="$WORK/out.jsonl" err="$WORK/err.txt" status=0
    rm -f "$WORK/io.txt"
    (cd "$CHECKOUT" && exec env -i "${ENV[@]}" python3 -I -B "$WORK/measure.py" "${cmd[@]}" "$PROMPT") \
        </dev/null >"$out" 2>"$err" 3>"$WORK/io.txt" || status=$?
    stop_mock
    check "$client" "$status"
    SESSION_MS="$(measured wall_ms)"
    IO_WRITE_BYTES="$(measured write_bytes)"
    [[ -n "$SESSION_MS" && -n "$IO_WRITE_BYTES" ]] || die "the measuring wrapper printed nothing for $client"
    STEPS="$(jq -rs 'map(.elapsedMs) | [range(0; length - 1) as $k | .[$k + 1] - .[$k]] | map(tostring) | join(" ")' \
        "$WORK/requests.jsonl")"
    restore_checkout
}

# Fails the script unless the session did what was scripted (before the checkout is restored).
check() {
    local client="$1" status="$2" out="$WORK/out.jsonl" err="$WORK/err.txt" why=""
    [[ "$status" == 0 ]] || why="exited $status"
    local requests
    requests="$(wc -l <"$WORK/requests.jsonl" 2>/dev/null || echo 0)"
    [[ -n "$why" || "$requests" == 7 ]] || why="the mock served $requests requests, not 7"
    if [[ -z "$why" ]] && ! jq -e -s 'all(.responseIndex != null and .status == 200)' "$WORK/requests.jsonl" >/dev/null; then
        why="the mock refused a request: $(jq -c -s 'map({responseIndex, status, violation})' "$WORK/requests.jsonl")"
    fi
    if [[ -z "$why" ]]; then
        why="$(jq -rs --slurpfile expected "$WORK/expected.json" --arg old "$OLD" '
            def text: [.result.content[]? | select(.type == "text") | .text] | join("\n");
            [.[] | select(.type == "tool_execution_end")] as $ends
            | if (.[-1] | .type != "agent_settled" or .aborted != false) then "the run did not settle"
              elif ($ends | length) != 6 then "\($ends | length) tool results, not 6"
              elif [$ends[].toolName] != ["grep", "find", "bash", "read", "edit", "bash"]
                then "tools \([$ends[].toolName]) ran, not grep, find, bash, read, edit, bash"
              elif any($ends[]; .isError)
                then "a tool result is an error: \([$ends[] | select(.isError) | {toolName, text: (text | .[:300])}])"
              elif ($ends[0] | text | test("fn main")) | not then "grep found no `fn main`: \($ends[0] | text | .[:300])"
              elif ($ends[1] | text | test("\\.toml")) | not then "find found no *.toml: \($ends[1] | text | .[:300])"
              elif ($ends[2] | text | sub("\n+$"; "")) != $expected[0][0]
                then "the first bash printed \($ends[2] | text), not \($expected[0][0])"
              elif ($ends[3] | text | contains($old)) | not then "the read does not show OLD"
              elif ($ends[5] | text | sub("\n+$"; "")) != $expected[0][1]
                then "the second bash printed \($ends[5] | text), not \($expected[0][1])"
              else "" end' "$out")" || why="its output is not JSON lines"
    fi
    if [[ -z "$why" ]] && ! cmp -s "$CHECKOUT/$TARGET" "$WORK/edited"; then
        why="$TARGET on disk is not the file with the edit applied"
    fi
    [[ -z "$why" ]] || die "$client's session in $CHECKOUT failed: $why
stderr: $(tail -c 2000 "$err")"
}

# --- one checkout --------------------------------------------------------------------------------

declare -A NAME=(
    [journal]="agent-lsp (sessions on)"
    [nojournal]="agent-lsp --no-session"
    [pi]="pi ${PI_VERSION:-}"
)

# "median (lo–hi)" of a list of numbers, with printf format fmt for each.
cell() {
    local fmt="$1" med lo hi
    read -r med lo hi < <(tr ' ' '\n' <<<"$2" | grep . | median)
    # shellcheck disable=SC2059 # the format is ours
    printf "$fmt ($fmt–$fmt)" "$med" "$lo" "$hi"
}

bench_checkout() {
    CHECKOUT=""
    local checkout
    checkout="$(realpath "$1")" || die "no such directory: $1"
    git -C "$checkout" rev-parse --git-dir >/dev/null 2>&1 || die "$checkout is not a git checkout"
    [[ -f "$checkout/$TARGET" ]] || die "$checkout has no $TARGET (set BENCH_TARGET and BENCH_OLD for it)"
    [[ -z "$(git -C "$checkout" status --porcelain)" ]] \
        || die "$checkout has changes: the bench needs a clean tree (it restores $TARGET after each session)"
    local occurrences
    occurrences="$(count_old "$checkout/$TARGET")"
    [[ "$occurrences" == 1 ]] || die "'$OLD' occurs $occurrences times in $checkout/$TARGET, not once (set BENCH_OLD)"
    git -C "$checkout" for-each-ref --format='%(refname)' refs/agent-lsp/ >"$WORK/refs-before"
    # From here on the checkout is ours to restore (on exit too).
    CHECKOUT="$checkout"
    git -C "$CHECKOUT" update-index -q --refresh || true  # (stat data only, as `git status` does)

    # The model's script.
    jq -n --arg target "$TARGET" --arg old "$OLD" --arg new "$NEW" --arg status "$STATUS_CMD" --arg diff "$DIFF_CMD" '
        [["grep", {pattern: "fn main", glob: "*.rs"}], ["find", {pattern: "*.toml"}],
         ["bash", {command: $status}], ["read", {path: $target}],
         ["edit", {path: $target, edits: [{oldText: $old, newText: $new}]}], ["bash", {command: $diff}]]
        | {responses: ([to_entries[] | {toolCalls: [{id: "call_\(.key)", name: .value[0], arguments: .value[1]}]}]
                       + [{text: "Done."}])}' >"$WORK/script.json"

    # What the two bash commands print run directly (before and after the edit), and their floor.
    local status_out diff_out floor_status floor_diff floor_rg="" floor_fd=""
    status_out="$(cd "$CHECKOUT" && bash -c "$STATUS_CMD")"
    floor_status="$(floor_ms "$STATUS_CMD")"
    apply_edit
    diff_out="$(cd "$CHECKOUT" && bash -c "$DIFF_CMD")"
    floor_diff="$(floor_ms "$DIFF_CMD")"
    restore_checkout
    jq -n --arg a "$status_out" --arg b "$diff_out" '[$a, $b] | map(sub("\n+$"; ""))' >"$WORK/expected.json"
    if [[ -n "$PI_TOOLS_BIN" ]]; then
        # As pi runs them (its grep stops reading at 100 matches; this runs to the end).
        floor_rg="$(floor_ms "'$PI_TOOLS_BIN/rg' --no-config --json --line-number --color=never --hidden --glob '*.rs' -- 'fn main' .")"
        floor_fd="$(floor_ms "'$PI_TOOLS_BIN/fd' --color=never --hidden --glob --max-results 1001 -- '*.toml' .")"
    fi

    local files bytes
    files="$(git -C "$CHECKOUT" ls-files | wc -l)"
    bytes="$(cd "$CHECKOUT" && git ls-files -z | xargs -0 stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')"
    echo
    echo "== $CHECKOUT at $(git -C "$CHECKOUT" rev-parse --short=10 HEAD): $files tracked files," \
        "$(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1048576 }') MiB; edit of $TARGET;" \
        "$REPS repetitions; load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"

    local -A WALL=() STEP=() WRITTEN=()
    local rep k n client s
    local -a steps walls written
    n=${#CLIENTS[@]}
    for ((rep = 0; rep <= REPS; rep++)); do
        for ((k = 0; k < n; k++)); do
            client="${CLIENTS[$(((rep + k) % n))]}"
            session "$client"
            # Repetition 0 warms the page cache and the binaries; it is not counted.
            ((rep == 0)) && continue
            WALL[$client]+="$SESSION_MS "
            WRITTEN[$client]+="$(awk -v b="$IO_WRITE_BYTES" 'BEGIN { printf "%.3f", b / 1e6 }') "
            read -r -a steps <<<"$STEPS"
            for s in 0 1 2 3 4 5; do
                STEP[$client,$s]+="${steps[$s]} "
            done
        done
    done
    echo "   (load after: $(cut -d' ' -f1-3 /proc/loadavg))"

    # The table for BENCH.md: median (range), ms; MB written.
    echo
    echo "| client | whole session | first \`bash\` | second \`bash\` | \`grep\` | \`find\` | written (MB) |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for client in "${CLIENTS[@]}"; do
        echo "| ${NAME[$client]} | $(cell %.0f "${WALL[$client]}") | $(cell %.0f "${STEP[$client,2]}")" \
            "| $(cell %.0f "${STEP[$client,5]}") | $(cell %.0f "${STEP[$client,0]}") | $(cell %.0f "${STEP[$client,1]}")" \
            "| $(cell %.2f "${WRITTEN[$client]}") |"
    done
    # shellcheck disable=SC2016 # the backquotes are markdown
    printf '| floor, run directly | — | %.1f (`git status`) | %.1f (`git diff --stat`) | %s | %s | — |\n' \
        "$floor_status" "$floor_diff" "${floor_rg:+$(printf '%.1f (`rg`)' "$floor_rg")}" \
        "${floor_fd:+$(printf '%.1f (`fd`)' "$floor_fd")}"
    echo
    echo "(ms, median (range) of $REPS; a step is request k → k+1 at the mock: the tool plus the client's" \
        "work on that turn; floors: median of 5 after a warm-up)"
    echo "raw, per run (wall ms | steps grep find bash read edit bash, ms | MB written):"
    for client in "${CLIENTS[@]}"; do
        read -r -a walls <<<"${WALL[$client]}"
        read -r -a written <<<"${WRITTEN[$client]}"
        for ((k = 0; k < ${#walls[@]}; k++)); do
            local row=""
            for s in 0 1 2 3 4 5; do
                read -r -a steps <<<"${STEP[$client,$s]}"
                row+="${steps[$k]} "
            done
            printf '  %-10s %9s | %s| %s\n' "$client" "${walls[$k]}" "$row" "${written[$k]}"
        done
    done
    CHECKOUT=""
}

if (($# == 0)); then
    echo "== generating (or reusing) $DEFAULT_REPO"
    python3 "$ROOT/benches/gen-repo.py" --files 15000 --mib 130 "$DEFAULT_REPO" || die "gen-repo.py failed"
    set -- "$DEFAULT_REPO"
fi
for checkout in "$@"; do
    bench_checkout "$checkout"
done
