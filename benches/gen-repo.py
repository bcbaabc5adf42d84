#!/usr/bin/env python3
"""Generates a large, deterministic git repository for the effect-journal benchmarks (BENCH.md,
issue 31; scripts/bench-journal.sh).

    python3 benches/gen-repo.py --files 15000 --mib 130 /var/tmp/agent-lsp-bench/repo-15k
    python3 benches/gen-repo.py --files 100000 /var/tmp/agent-lsp-bench/repo-100k

OUT_DIR becomes a git repository on branch `main` with exactly --files tracked files of about
--mib MiB in all (default: 130 MiB per 15,000 files, ~9 KB a file), committed once. It is shaped
like a Rust + TypeScript monorepo: `crates/` (Rust crates, each with a Cargo.toml), `packages/`
(TypeScript packages), `docs/`, `tools/`, `assets/` (PNG-like random bytes) and `tests/fixtures/`,
nested up to 6 directories deep with roughly 10-20 entries a directory. Text files are made of
plausible, indented source lines; sizes are log-uniform (about 200 B to 40 KB, scaled so the total
meets --mib), plus a few hundred files of 100 KB to 1 MB and a handful above 1 MiB (Cargo.lock,
package-lock.json, a generated JSON schema, binary assets). A `.gitignore` ignores `target/`,
`node_modules/` and `*.log`, and ignored, untracked files are present in all three (they are not
among the tracked files).

Known content for the scripted session of scripts/bench-journal.sh: `src/main.rs` holds the line
`    run_server(config)` exactly once (the edit target); every `main.rs` and every file under an
`examples/` directory holds `fn main` (the grep target); every crate has a `Cargo.toml` (the find
target).

Determinism: everything comes from a splitmix64 generator written here (never `random`, `hash()`
or the file system's order) and from SHAKE-256 for binary bytes; the commit has a fixed identity
and date and is made with the user's git configuration ignored, so the same arguments give the
same HEAD commit id on every machine and Python version (>= 3.8). Known ids are checked.

Idempotent: if OUT_DIR already holds this generator's commit for these arguments and
`git status --porcelain` is empty, nothing is rewritten (the ignored files are restored if they
are missing). A non-empty OUT_DIR that is anything else is refused unless --force, which deletes
it first (and regenerates even a clean, matching OUT_DIR).
"""

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time

GENERATOR_VERSION = 1
MASK64 = (1 << 64) - 1
MIB = 1 << 20

# HEAD commit ids this generator is known to produce (a mismatch means it is not deterministic
# any more, or was changed without updating this table).
KNOWN_COMMITS = {
    # (files, mib, seed): commit (each checked with Python 3.11 and 3.13; the first also 3.8)
    (3000, 26, 1): "36e71c26629e257922e30822df3fb5bab9275abf",
    (15000, 130, 1): "cce48741d6d9a89751c659f988915997781cbd11",
    (100000, 867, 1): "f21d6c0eae173c6e326d28faa12e9fba2f05dd49",
}


# --- the random generator ------------------------------------------------------------------------


class Rng:
    """splitmix64 (Steele, Lea, Flood 2014): tiny, fast in Python, the same on every platform."""

    __slots__ = ("state",)

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = z = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        # Modulo bias is at most n / 2^64: irrelevant here.
        return self.next() % n

    def between(self, lo, hi):
        """An integer in [lo, hi]."""
        return lo + self.next() % (hi - lo + 1)

    def choice(self, seq):
        return seq[self.next() % len(seq)]

    def chance(self, percent):
        return self.next() % 100 < percent


def seed_of(*parts):
    """A 64-bit seed from strings, stable everywhere (unlike `hash()`)."""
    digest = hashlib.blake2b("\0".join(str(p) for p in parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def random_bytes(n, *parts):
    """n deterministic pseudo-random bytes (SHAKE-256 is fast in C, and exact everywhere)."""
    return hashlib.shake_256(("bytes\0" + "\0".join(str(p) for p in parts)).encode()).digest(n)


# Log-uniform sizes in integers only (floating-point `exp` may differ in the last bit between
# libms, and a truncated size would then differ): 2^(k/64) in Q32 from exact integer square roots.
def _pow2_table():
    roots = []  # roots[j] = 2^(1 / 2^(j+1)) in Q32
    r = 2 << 32
    for _ in range(6):
        r = math.isqrt(r << 32)
        roots.append(r)
    table = []
    for k in range(64):
        v = 1 << 32
        for j in range(6):
            if (k >> (5 - j)) & 1:
                v = (v * roots[j]) >> 32
        table.append(v)
    return table


POW2 = _pow2_table()
_STEPS = {}


def _scaled(lo, step):
    return ((lo << (step >> 6)) * POW2[step & 63]) >> 32


def log_uniform(rng, lo, hi):
    """An integer in about [lo, hi] whose logarithm is uniform (1/64-octave steps, filled in)."""
    steps = _STEPS.get((lo, hi))
    if steps is None:
        steps = 0
        while _scaled(lo, steps + 1) <= hi:
            steps += 1
        _STEPS[(lo, hi)] = steps
    step = rng.below(steps)
    a = _scaled(lo, step)
    return a + rng.below(_scaled(lo, step + 1) - a + 1)


# --- vocabulary and line pools ------------------------------------------------------------------

# No word may be `main`, `target`, `dist` or end up as `run_server(config)`: those are reserved for
# the known content and the ignore patterns.
WORDS = """
account action adapter address agent alloc anchor apply array asset async attr auth backend batch
binary block bound buffer builder bundle byte cache call canvas capture cell channel chunk client
clock codec column command commit context cursor data debug decode delta diff digest dispatch
document domain draft driver edge editor encode engine entry env error event extent factory field
filter flag format frame future graph guard handle hash header heap hook host index input inner
item job journal kernel key label layer layout lease ledger lexer limit line link list loader local
lock logger lookup manifest map marker memory merge message meta metric mirror mode model module
monitor mount node notify object offset option order origin output owner packet page panel parser
patch path peer pipe plan plugin policy pool port prefix probe process profile prompt proxy query
queue range reader record region registry render replay report request resolve resource response
result retry route rule runtime sample scan schema scope script search segment select sender
session shard shell signal sink slice snapshot socket source span stack state status store stream
string style symbol sync table task template tensor text thread ticket timer token trace tracker
transport tree trigger tuple update upload value vector version view visitor watch widget window
worker writer zone
""".split()
TYPES_RS = ["u8", "u32", "u64", "usize", "i64", "bool", "String", "&str", "Vec<u8>", "PathBuf",
            "Option<String>", "Arc<Mutex<State>>", "HashMap<String, Value>", "Duration"]
TYPES_TS = ["string", "number", "boolean", "Uint8Array", "string[]", "Map<string, number>",
            "Promise<void>", "Record<string, unknown>", "unknown", "Date"]


def camel(words):
    return "".join(w[0].upper() + w[1:] for w in words)


def lower_camel(words):
    return words[0] + camel(words[1:])


def sentence(rng, n):
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words)


class Pools:
    """Lines to draw from, built once from a fixed seed (a few thousand of each kind)."""

    def __init__(self, seed):
        rng = Rng(seed_of("pools", seed))
        w = lambda: rng.choice(WORDS)  # noqa: E731
        snake = lambda: w() + "_" + w() if rng.chance(50) else w()  # noqa: E731
        typ = lambda: camel([w(), w()]) if rng.chance(60) else rng.choice(TYPES_RS)  # noqa: E731
        lc = lambda: lower_camel([w(), w()]) if rng.chance(50) else w()  # noqa: E731
        tts = lambda: camel([w(), w()]) if rng.chance(50) else rng.choice(TYPES_TS)  # noqa: E731
        num = lambda: str(rng.below(4096))  # noqa: E731

        rs_statements = [
            lambda: f"let {snake()} = {snake()}.{snake()}(&{snake()})?;",
            lambda: f"let mut {snake()} = {typ()}::new({snake()}, {num()});",
            lambda: f"{snake()}.push({snake()}.len() + {num()});",
            lambda: f"{snake()}.{snake()} = {snake()}.{snake()}.saturating_sub({num()});",
            lambda: f'tracing::debug!("{sentence(rng, 3)}: {{}}", {snake()});',
            lambda: f"// {sentence(rng, rng.between(3, 9))}",
            lambda: f"return Err(Error::{camel([w(), w()])}({snake()}.to_string()));",
            lambda: f"let {snake()}: {typ()} = {snake()}.iter().map(|{w()}| {w()}.{snake()}()).collect();",
            lambda: f"self.{snake()}.insert({snake()}.clone(), {snake()});",
            lambda: f"assert_eq!({snake()}.{snake()}(), {num()});",
            lambda: f"{snake()}.{snake()}({snake()}, {num()}).await?;",
            lambda: f'let {snake()} = format!("{{}}/{{}}", {snake()}, {snake()});',
        ]
        rs_openers = [
            lambda: f"if {snake()}.is_empty() {{",
            lambda: f"if {snake()} > {num()} {{",
            lambda: f"for {snake()} in {snake()}.iter() {{",
            lambda: f"for {snake()} in 0..{num()} {{",
            lambda: f"while let Some({snake()}) = {snake()}.next() {{",
            lambda: f"if let Some({snake()}) = self.{snake()}.get(&{snake()}) {{",
            lambda: f"let {snake()} = {{",
        ]
        rs_items = [
            lambda: f"pub fn {snake()}(&self, {snake()}: {typ()}) -> Result<{typ()}, Error> {{",
            lambda: f"fn {snake()}({snake()}: &{typ()}, {snake()}: {typ()}) -> {typ()} {{",
            lambda: f"pub async fn {snake()}(&mut self, {snake()}: {typ()}) -> Result<(), Error> {{",
            lambda: f"pub(crate) fn {snake()}({snake()}: {typ()}) -> bool {{",
        ]
        ts_statements = [
            lambda: f"const {lc()} = {lc()}.{lc()}({lc()}, {num()});",
            lambda: f"let {lc()}: {tts()} = await {lc()}.{lc()}();",
            lambda: f"{lc()}.push({lc()}.length + {num()});",
            lambda: f"this.{lc()} = {lc()} ?? {num()};",
            lambda: f'console.debug("{sentence(rng, 3)}", {lc()});',
            lambda: f"// {sentence(rng, rng.between(3, 9))}",
            lambda: f"throw new {camel([w(), w()])}Error(`{sentence(rng, 2)} ${{{lc()}}}`);",
            lambda: f"return {lc()}.map(({w()}) => {w()}.{lc()});",
            lambda: f"{lc()}.set({lc()}, {lc()});",
            lambda: f'expect({lc()}.{lc()}).toBe("{w()}");',
        ]
        ts_openers = [
            lambda: f"if ({lc()}.length > {num()}) {{",
            lambda: f"for (const {lc()} of {lc()}) {{",
            lambda: f"if (!{lc()}) {{",
            lambda: f"while ({lc()} < {num()}) {{",
            lambda: f"try {{",
        ]
        ts_items = [
            lambda: f"export function {lc()}({lc()}: {tts()}, {lc()}: {tts()}): {tts()} {{",
            lambda: f"export async function {lc()}({lc()}: {tts()}): Promise<{tts()}> {{",
            lambda: f"function {lc()}({lc()}: {tts()}): {tts()} {{",
            lambda: f"export const {lc()} = ({lc()}: {tts()}): {tts()} => {{",
        ]
        js_items = [
            lambda: f"export function {lc()}({lc()}, {lc()}) {{",
            lambda: f"async function {lc()}({lc()}) {{",
            lambda: f"module.exports.{lc()} = function ({lc()}) {{",
        ]
        self.rs = [rng.choice(rs_statements)() for _ in range(4096)]
        self.rs_open = [rng.choice(rs_openers)() for _ in range(1024)]
        self.rs_items = [rng.choice(rs_items)() for _ in range(2048)]
        self.rs_use = [f"use crate::{w()}::{{{camel([w(), w()])}, {camel([w()])}}};" for _ in range(256)]
        self.rs_fields = [f"pub {snake()}: {typ()}," for _ in range(1024)]
        self.rs_types = [camel([w(), w()]) for _ in range(1024)]
        self.ts = [rng.choice(ts_statements)() for _ in range(4096)]
        self.ts_open = [rng.choice(ts_openers)() for _ in range(1024)]
        self.ts_items = [rng.choice(ts_items)() for _ in range(2048)]
        self.js = [s for s in self.ts if ": " not in s]  # the statements without type annotations
        self.js_items = [rng.choice(js_items)() for _ in range(1024)]
        self.ts_import = [f'import {{ {camel([w(), w()])} }} from "../{w()}/{w()}";' for _ in range(256)]
        self.prose = [sentence(rng, rng.between(6, 18)).capitalize() + "." for _ in range(2048)]


INDENT_RS = ["    " * i for i in range(12)]
INDENT_TS = ["  " * i for i in range(12)]


# --- file contents --------------------------------------------------------------------------------


def code_body(rng, out, level, statements, openers, indent, depth_left):
    """Appends a block body: statements, some of them nested blocks (lines indented by depth)."""
    n = 2 + rng.below(9)
    added = 0
    for _ in range(n):
        r = rng.next()
        if r % 6 == 0 and depth_left > 0:
            out.append(indent[level] + openers[(r >> 8) % len(openers)])
            added += 1 + code_body(rng, out, level + 1, statements, openers, indent, depth_left - 1)
            out.append(indent[level] + "}")
            added += 1
        else:
            out.append(indent[level] + statements[(r >> 8) % len(statements)])
            added += 1
    return added


def fill_to(out, size, make_item, make_filler):
    """Appends items (several lines each) to out until it holds size bytes; the item that would
    overshoot by more than a line is dropped and short filler lines finish the file, so the file
    is within a line of size (and the repository within a few KB of --mib)."""
    total = sum(len(line) + 1 for line in out)
    while total < size:
        start = len(out)
        make_item(out)
        added = sum(len(line) + 1 for line in out[start:])
        if total + added > size + 80:
            del out[start:]
            while total < size:
                line = make_filler()
                out.append(line)
                total += len(line) + 1
            break
        total += added


def gen_rust(rng, pools, size, path):
    out = [f"//! {pools.prose[rng.below(len(pools.prose))]}", f"//! ({path})", ""]
    for _ in range(rng.between(2, 7)):
        out.append(rng.choice(pools.rs_use))
    out.append("")
    if path.rsplit("/", 1)[-1] == "main.rs" or "/examples/" in path:
        out += ["fn main() {", "    let config = Config::load();"]
        code_body(rng, out, 1, pools.rs, pools.rs_open, INDENT_RS, 2)
        out += ["}", ""]

    def item(out):
        r = rng.next()
        kind = r % 10
        if kind < 6:
            out.append(pools.rs_items[(r >> 8) % len(pools.rs_items)])
            code_body(rng, out, 1, pools.rs, pools.rs_open, INDENT_RS, 3)
            out.append("}")
        elif kind < 8:
            name = pools.rs_types[(r >> 8) % len(pools.rs_types)]
            out.append("#[derive(Debug, Clone)]")
            out.append(f"pub struct {name} {{")
            for _ in range(rng.between(2, 8)):
                out.append("    " + rng.choice(pools.rs_fields))
            out.append("}")
            out.append("")
            out.append(f"impl {name} {{")
            for _ in range(rng.between(1, 3)):
                out.append("    " + rng.choice(pools.rs_items))
                code_body(rng, out, 2, pools.rs, pools.rs_open, INDENT_RS, 3)
                out.append("    }")
            out.append("}")
        else:
            out.append("/// " + rng.choice(pools.prose))
            out.append(f"pub const {rng.choice(WORDS).upper()}_{rng.choice(WORDS).upper()}: usize = {rng.below(65536)};")
        out.append("")

    fill_to(out, size, item, lambda: "// " + rng.choice(pools.prose))
    return "\n".join(out) + "\n"


def gen_ts(rng, pools, size, path, js=False):
    items = pools.js_items if js else pools.ts_items
    statements = pools.js if js else pools.ts
    out = [f"// {path}: {pools.prose[rng.below(len(pools.prose))]}", ""]
    for _ in range(rng.between(1, 6)):
        out.append(rng.choice(pools.ts_import))
    out.append("")

    def item(out):
        start = len(out)
        r = rng.next()
        if r % 8 < 6:
            out.append(items[(r >> 8) % len(items)])
            code_body(rng, out, 1, statements, pools.ts_open, INDENT_TS, 3)
            out.append("};" if out[start].endswith("=> {") else "}")
        else:
            out.append("/** " + rng.choice(pools.prose) + " */")
            if js:
                out.append(f"export const {rng.choice(WORDS).upper()} = {rng.below(65536)};")
            else:
                out.append(f"export interface {rng.choice(pools.rs_types)} {{")
                for _ in range(rng.between(2, 7)):
                    out.append(f"  {rng.choice(WORDS)}{'?' if rng.chance(30) else ''}: {rng.choice(TYPES_TS)};")
                out.append("}")
        out.append("")

    fill_to(out, size, item, lambda: "// " + rng.choice(pools.prose))
    return "\n".join(out) + "\n"


def gen_markdown(rng, pools, size, path):
    out = [f"# {camel([rng.choice(WORDS), rng.choice(WORDS)])}", ""]

    def item(out):
        r = rng.next() % 10
        if r < 2:
            out.append("## " + sentence(rng, rng.between(2, 5)).capitalize())
        elif r < 6:
            out.append(" ".join(rng.choice(pools.prose) for _ in range(rng.between(2, 6))))
        elif r < 8:
            for _ in range(rng.between(2, 6)):
                out.append("- " + rng.choice(pools.prose))
        else:
            out.append("```rust")
            code_body(rng, out, 0, pools.rs, pools.rs_open, INDENT_RS, 2)
            out.append("```")
        out.append("")

    fill_to(out, size, item, lambda: rng.choice(pools.prose))
    return "\n".join(out) + "\n"


def json_record(rng, depth=0):
    record = {"id": rng.below(1 << 31), "name": f"{rng.choice(WORDS)}-{rng.choice(WORDS)}"}
    for _ in range(rng.between(1, 5)):
        r = rng.next() % 6
        key = rng.choice(WORDS)
        if r == 0 and depth < 2:
            record[key] = json_record(rng, depth + 1)
        elif r == 1:
            record[key] = [rng.choice(WORDS) for _ in range(rng.between(0, 4))]
        elif r == 2:
            record[key] = rng.chance(50)
        elif r == 3:
            record[key] = rng.below(100000)
        else:
            record[key] = sentence(rng, rng.between(1, 8))
    return record


def gen_json(rng, pools, size, path):
    records = []
    total = 4
    while total < size:
        text = json.dumps(json_record(rng), indent=2).replace("\n", "\n  ")
        records.append("  " + text)
        total += len(text) + 4
    return "[\n" + ",\n".join(records) + "\n]\n"


def gen_toml(rng, pools, size, path):
    out = [f"# {rng.choice(pools.prose)}"]

    def item(out):
        out.append("")
        out.append(f"[{rng.choice(WORDS)}.{rng.choice(WORDS)}]")
        for _ in range(rng.between(2, 8)):
            r = rng.next() % 3
            key = rng.choice(WORDS)
            if r == 0:
                out.append(f'{key} = "{sentence(rng, rng.between(1, 4))}"')
            elif r == 1:
                out.append(f"{key} = {rng.below(10000)}")
            else:
                out.append(f'{key} = ["{rng.choice(WORDS)}", "{rng.choice(WORDS)}"]')

    fill_to(out, size, item, lambda: "# " + rng.choice(pools.prose))
    return "\n".join(out) + "\n"


def gen_cargo_toml(rng, name, members=None):
    out = []
    if members is not None:
        out += ["[workspace]", 'resolver = "2"', "members = ["]
        out += [f'  "{m}",' for m in members]
        out += ["]", ""]
    out += ["[package]", f'name = "{name}"', f'version = "0.{rng.below(40)}.{rng.below(20)}"',
            'edition = "2021"', 'license = "MIT"', "", "[dependencies]"]
    for _ in range(rng.between(3, 12)):
        dep = rng.choice(WORDS) + "-" + rng.choice(WORDS)
        if rng.chance(40):
            out.append(f'{dep} = {{ version = "{rng.below(5)}.{rng.below(30)}", features = ["{rng.choice(WORDS)}"] }}')
        else:
            out.append(f'{dep} = "{rng.below(5)}.{rng.below(30)}.{rng.below(20)}"')
    return "\n".join(out) + "\n"


def gen_package_json(rng, name):
    deps = {f"@{rng.choice(WORDS)}/{rng.choice(WORDS)}": f"^{rng.below(9)}.{rng.below(30)}.0"
            for _ in range(rng.between(2, 10))}
    return json.dumps({"name": name, "version": f"1.{rng.below(20)}.{rng.below(10)}", "private": True,
                       "type": "module", "main": "src/index.ts",
                       "scripts": {"build": "tsc -b", "test": "vitest run"},
                       "dependencies": deps}, indent=2) + "\n"


def gen_cargo_lock(rng, size):
    out = ["# This file is automatically @generated by Cargo.", "# It is not intended for manual editing.",
           "version = 3"]
    total = 100
    while total < size:
        start = len(out)
        out += ["", "[[package]]", f'name = "{rng.choice(WORDS)}-{rng.choice(WORDS)}"',
                f'version = "{rng.below(5)}.{rng.below(40)}.{rng.below(20)}"',
                'source = "registry+https://github.com/rust-lang/crates.io-index"',
                f'checksum = "{random_bytes(32, "lock", rng.next()).hex()}"']
        if rng.chance(70):
            out.append("dependencies = [")
            for _ in range(rng.between(1, 8)):
                out.append(f' "{rng.choice(WORDS)}-{rng.choice(WORDS)}",')
            out.append("]")
        total += sum(len(line) + 1 for line in out[start:])
    return "\n".join(out) + "\n"


def gen_package_lock(rng, size):
    import base64

    packages = {"": {"name": "monorepo", "version": "0.0.0"}}
    total = 100
    while total < size:
        name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{rng.below(1000)}"
        version = f"{rng.below(9)}.{rng.below(30)}.{rng.below(20)}"
        entry = {"version": version,
                 "resolved": f"https://registry.npmjs.org/{name}/-/{name}-{version}.tgz",
                 "integrity": "sha512-" + base64.b64encode(random_bytes(64, "npm", rng.next())).decode(),
                 "dependencies": {f"{rng.choice(WORDS)}-{rng.choice(WORDS)}": f"^{rng.below(9)}.0.0"
                                  for _ in range(rng.between(0, 4))}}
        packages[f"node_modules/{name}"] = entry
        total += len(json.dumps(entry, indent=2)) + len(name) + 30
    return json.dumps({"name": "monorepo", "lockfileVersion": 3, "requires": True, "packages": packages},
                      indent=2) + "\n"


def gen_binary(size, path, magic):
    return magic + random_bytes(max(0, size - len(magic)), "binary", path)


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
WASM = b"\x00asm\x01\x00\x00\x00"


def content_of(path, size, pools, seed):
    """The bytes of one tracked file (its own generator, seeded by its path: order-independent)."""
    rng = Rng(seed_of("file", seed, path))
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if name == "Cargo.lock":
        return gen_cargo_lock(rng, size).encode()
    if name == "package-lock.json":
        return gen_package_lock(rng, size).encode()
    if ext == "png":
        return gen_binary(size, path, PNG)
    if ext == "wasm":
        return gen_binary(size, path, WASM)
    generator = {"rs": gen_rust, "ts": gen_ts, "md": gen_markdown, "json": gen_json, "toml": gen_toml}
    if ext == "js":
        return gen_ts(rng, pools, size, path, js=True).encode()
    return generator[ext](rng, pools, size, path).encode()


TSCONFIG = b"""{
  "extends": "../../tsconfig.json",
  "compilerOptions": {
    "outDir": "out",
    "rootDir": "src",
    "composite": true
  },
  "include": ["src"]
}
"""

MAIN_RS = """//! The server's entry point.

mod config;
mod server;

use crate::config::Config;
use crate::server::run_server;

fn main() {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("cannot read the configuration: {error}");
            std::process::exit(2);
        }
    };
    tracing_subscriber::fmt().with_env_filter(config.log_filter()).init();
    tracing::info!("listening on {}", config.address);
    run_server(config)
}
"""


# --- the tree -------------------------------------------------------------------------------------


class Tree:
    """Paths of the tracked files, with a size and a kind each; names unique per directory."""

    def __init__(self, rng):
        self.rng = rng
        self.files = {}  # path -> size (None: decided later)
        self.names = {}  # dir -> set of names

    def unique(self, directory, name):
        taken = self.names.setdefault(directory, set())
        stem, dot, ext = name.partition(".")
        candidate, k = name, 2
        while candidate in taken:
            candidate = f"{stem}{k}{dot}{ext}"
            k += 1
        taken.add(candidate)
        return candidate

    def add(self, path, size=None):
        directory, _, name = path.rpartition("/")
        name = self.unique(directory, name)
        path = f"{directory}/{name}" if directory else name
        self.files[path] = size
        return path

    def subdir(self, parent, name):
        name = self.unique(parent, name)
        return f"{parent}/{name}" if parent else name

    def fill(self, directory, n, depth, max_depth, pick_name):
        """Places n files under directory: a few here, the rest in subdirectories, recursively."""
        rng = self.rng
        if n <= 0:
            return
        if n <= 24 or depth >= max_depth:
            here = n
        else:
            here = min(n, rng.between(5, 12))
        for _ in range(here):
            self.add(f"{directory}/{pick_name(rng)}")
        rest = n - here
        if rest <= 0:
            return
        # Enough subdirectories that the levels left can hold the rest at ~18 files a directory.
        levels = max_depth - depth
        branches = 2
        while branches < 12 and branches ** levels * 18 < rest:
            branches += 1
        branches = max(1, min(branches, rest // 10))  # no subdirectory of a handful of files
        weights = [rng.between(2, 6) for _ in range(branches)]
        shares = split(rest, weights)
        for share in shares:
            sub = self.subdir(directory, rng.choice(WORDS) if rng.chance(60) else f"{rng.choice(WORDS)}_{rng.choice(WORDS)}")
            self.fill(sub, share, depth + 1, max_depth, pick_name)


def split(total, weights):
    """total split in proportion to weights, each part >= 1 (len(weights) <= total)."""
    parts = [1] * len(weights)
    left = total - len(weights)
    weight_sum = sum(weights)
    for i, w in enumerate(weights):
        parts[i] += left * w // weight_sum
    parts[-1] += total - sum(parts)
    return parts


def namer(exts):
    """A name picker: a snake_case or kebab-case word pair with an extension drawn from exts."""

    def pick(rng):
        ext = exts[rng.below(len(exts))]
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        if ext in ("ts", "js"):
            return f"{a}-{b}.{ext}" if rng.chance(50) else f"{a}.{ext}"
        return f"{a}_{b}.{ext}" if rng.chance(50) else f"{a}.{ext}"

    return pick


# Extension mixes (repeated entries are weights).
RUST_SRC = namer(["rs"] * 12 + ["md"])
RUST_TESTS = namer(["rs"] * 6 + ["json", "toml"])
TS_SRC = namer(["ts"] * 10 + ["js", "js", "json", "md"])
DOCS = namer(["md"] * 8 + ["json"])
TOOLS = namer(["js"] * 5 + ["ts"] * 3 + ["json", "toml"])
ASSETS = namer(["png"] * 5 + ["json"])
FIXTURES = namer(["json"] * 4 + ["toml"] * 2 + ["md", "rs"])


def build_tree(n_files, seed):
    rng = Rng(seed_of("tree", seed))
    tree = Tree(rng)
    # Root files, and a handful above 1 MiB (more of them in larger repositories).
    for path in [".gitignore", "README.md", "Cargo.toml", "package.json", "tsconfig.json",
                 "rustfmt.toml", "src/main.rs", "src/config.rs", "src/server.rs", "src/lib.rs"]:
        tree.add(path)
    huge = [("Cargo.lock", 1_300_000 + rng.below(400_000)),
            ("package-lock.json", 2_400_000 + rng.below(800_000)),
            ("assets/generated/schema.json", 3_000_000 + rng.below(1_000_000)),
            ("assets/images/hero.png", 1_600_000 + rng.below(400_000)),
            ("assets/wasm/engine.wasm", 2_200_000 + rng.below(600_000))]
    for k in range(n_files // 25_000):
        huge.append((f"assets/generated/bundle_{k}.json", 1_100_000 + rng.below(2_000_000)))
    for path, size in huge:
        tree.add(path, size)

    left = n_files - len(tree.files)
    groups = split(left, [45, 35, 6, 5, 4, 5])
    crates_n, packages_n, docs_n, tools_n, assets_n, fixtures_n = groups

    # Rust crates: a Cargo.toml, a README, src/ (lib.rs or, one in four, main.rs), tests/, and
    # for one in three examples/ (each with `fn main`).
    n_crates = max(2, math.isqrt(crates_n) // 4)
    crate_dirs = []
    for i, share in enumerate(split(crates_n, [rng.between(2, 8) for _ in range(n_crates)])):
        crate = tree.subdir("crates", f"{rng.choice(WORDS)}_{rng.choice(WORDS)}" if rng.chance(50) else rng.choice(WORDS))
        crate_dirs.append(crate)
        fixed = [f"{crate}/Cargo.toml", f"{crate}/README.md",
                 f"{crate}/src/main.rs" if i % 4 == 0 else f"{crate}/src/lib.rs"]
        for path in fixed:
            tree.add(path)
        body = share - len(fixed)
        examples = min(body // 20, rng.between(2, 4)) if i % 3 == 0 else 0
        tests = body // 10
        for _ in range(examples):
            tree.add(f"{crate}/examples/{rng.choice(WORDS)}.rs")
        tree.fill(f"{crate}/tests", tests, 3, 5, RUST_TESTS)
        tree.fill(f"{crate}/src", body - examples - tests, 3, 6, RUST_SRC)

    # TypeScript packages: package.json, tsconfig.json, README, src/, test/.
    n_packages = max(2, math.isqrt(packages_n) // 4)
    for i, share in enumerate(split(packages_n, [rng.between(2, 8) for _ in range(n_packages)])):
        package = tree.subdir("packages", f"{rng.choice(WORDS)}-{rng.choice(WORDS)}" if rng.chance(50) else rng.choice(WORDS))
        fixed = [f"{package}/package.json", f"{package}/tsconfig.json", f"{package}/README.md",
                 f"{package}/src/index.ts"]
        if i == 0:
            fixed.append(f"{package}/.gitignore")  # a nested ignore file (tracked)
        for path in fixed:
            tree.add(path)
        body = share - len(fixed)
        tests = body // 8
        tree.fill(f"{package}/test", tests, 3, 5, TS_SRC)
        tree.fill(f"{package}/src", body - tests, 3, 6, TS_SRC)

    tree.fill("docs", docs_n, 1, 4, DOCS)
    tree.fill("tools", tools_n, 1, 4, TOOLS)
    tree.fill("assets", assets_n, 1, 4, ASSETS)
    tree.fill("tests/fixtures", fixtures_n, 2, 5, FIXTURES)
    assert len(tree.files) == n_files, (len(tree.files), n_files)
    return tree, crate_dirs, [p for p, _ in huge]


def assign_sizes(tree, huge_paths, total_bytes, seed):
    """Sizes: the huge files as given; 1.5 % of the others 100 KB-1 MB (biased low); the rest
    log-uniform 200 B-40 KB, scaled together so the sum is total_bytes."""
    rng = Rng(seed_of("sizes", seed))
    paths = sorted(tree.files)
    huge = {p: tree.files[p] for p in huge_paths}
    sizes = {}
    large, small = [], []
    for path in paths:
        if path in huge:
            sizes[path] = huge[path]
        elif path.endswith((".gitignore", "Cargo.toml", "package.json", "tsconfig.json")) or path == "src/main.rs":
            sizes[path] = 0  # written specially, small
        elif rng.below(1000) < 15:
            # The smaller of two draws: most of them near 100-300 KB, a few near 1 MB.
            sizes[path] = min(log_uniform(rng, 100_000, 1_000_000), log_uniform(rng, 100_000, 1_000_000))
            large.append(path)
        else:
            sizes[path] = log_uniform(rng, 200, 40_000)
            small.append(path)
    budget = total_bytes - sum(huge.values()) - 2000 * sum(1 for s in sizes.values() if s == 0)
    small_sum = sum(sizes[p] for p in small)
    large_sum = sum(sizes[p] for p in large)
    if budget <= 0:
        sys.exit(f"gen-repo: --mib is too small for the {len(huge)} files above 1 MiB")
    # Scale the small files to fill the budget; if that would shrink them below a third, scale
    # the large ones too.
    if budget - large_sum >= small_sum // 3:
        num, den, scaled = budget - large_sum, small_sum, small
    else:
        num, den, scaled = budget, small_sum + large_sum, small + large
    for path in scaled:
        sizes[path] = max(64, sizes[path] * num // den)
    return sizes


# --- git -----------------------------------------------------------------------------------------


def git_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "gen-repo", "GIT_AUTHOR_EMAIL": "gen-repo@agent-lsp.invalid",
        "GIT_AUTHOR_DATE": "1767225600 +0000",  # 2026-01-01T00:00:00Z
        "GIT_COMMITTER_NAME": "gen-repo", "GIT_COMMITTER_EMAIL": "gen-repo@agent-lsp.invalid",
        "GIT_COMMITTER_DATE": "1767225600 +0000",
        "LC_ALL": "C",
    })
    return env


def git(out_dir, *args, capture=True):
    # No automatic gc or maintenance while we write (it would detach and race with our repack).
    result = subprocess.run(["git", "-C", out_dir, "-c", "gc.auto=0", "-c", "maintenance.auto=false", *args], env=git_env(), check=False,
                            stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE)
    if result.returncode != 0:
        sys.exit(f"gen-repo: git {' '.join(args)} failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout.decode().strip() if capture else ""


def commit_message(files, mib, seed):
    return f"gen-repo.py v{GENERATOR_VERSION}: --files {files} --mib {mib} --seed {seed}"


GITIGNORE = """# Build output and dependencies (present in the benchmark's tree, never tracked)
target/
node_modules/
*.log
.DS_Store
/out/
"""


def write_ignored(out_dir, seed, count):
    """Untracked, ignored files: target/ and node_modules/ (count in all), and a few *.log."""
    rng = Rng(seed_of("ignored", seed))
    written = 0
    half = count // 2
    for i in range(count):
        if i < half:
            path = f"target/debug/{rng.choice(['deps', 'build', 'incremental', '.fingerprint'])}/" \
                   f"{rng.choice(WORDS)}-{rng.below(1 << 32):08x}/{rng.choice(WORDS)}.{rng.choice(['d', 'rlib', 'o', 'json'])}"
        else:
            path = f"node_modules/{rng.choice(WORDS)}-{rng.choice(WORDS)}/" \
                   f"{rng.choice(['lib', 'dist', 'src', 'esm'])}/{rng.choice(WORDS)}{i}.js"
        full = os.path.join(out_dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(random_bytes(rng.between(100, 4000), "ignored", path))
        written += 1
    for path in ["server.log", "packages/npm-debug.log", "crates/build.log"]:
        with open(os.path.join(out_dir, path), "w") as f:
            f.write("\n".join(f"INFO {sentence(rng, 8)}" for _ in range(200)) + "\n")
        written += 1
    return written


def head_commit(out_dir):
    result = subprocess.run(["git", "-C", out_dir, "rev-parse", "--verify", "-q", "HEAD"], env=git_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    return result.stdout.decode().strip() if result.returncode == 0 else None


def already_generated(out_dir, message, known):
    """True if out_dir holds exactly this generator's commit (the known id, if there is one), clean."""
    if not os.path.isdir(os.path.join(out_dir, ".git")):
        return False
    commit = head_commit(out_dir)
    if commit is None or (known is not None and commit != known):
        return False
    if git(out_dir, "log", "-1", "--format=%B") != message:
        return False
    return git(out_dir, "status", "--porcelain") == ""


def report(out_dir, started):
    tracked = [p for p in git(out_dir, "ls-files", "-z").split("\0") if p]
    ignored = len([p for p in git(out_dir, "ls-files", "-z", "--others", "--ignored", "--exclude-standard").split("\0") if p])
    sizes = [os.path.getsize(os.path.join(out_dir, p)) for p in tracked]
    total = sum(sizes)
    commit = head_commit(out_dir)
    print(f"gen-repo: {out_dir}: {len(tracked)} tracked files, {total / MIB:.1f} MiB ({total} bytes); "
          f"{sum(1 for s in sizes if 100_000 <= s <= MIB)} of 100 KB-1 MiB, {sum(1 for s in sizes if s > MIB)} "
          f"above 1 MiB; {ignored} ignored, untracked files; HEAD {commit} "
          f"({time.monotonic() - started:.1f} s)")
    return commit, len(tracked)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=15000, help="tracked files (default 15000)")
    parser.add_argument("--mib", type=int, help="MiB of tracked content (default: 130 per 15000 files)")
    parser.add_argument("--seed", type=int, default=1, help="another seed gives another repository")
    parser.add_argument("--ignored", type=int, default=2000,
                        help="untracked files under the ignored target/ and node_modules/ (default 2000)")
    parser.add_argument("--force", action="store_true", help="delete OUT_DIR first and regenerate it, whatever it holds")
    parser.add_argument("out_dir", metavar="OUT_DIR")
    args = parser.parse_args()
    if args.files < 200:
        parser.error("--files must be at least 200")
    mib = args.mib if args.mib is not None else round(args.files * 130 / 15000)
    out_dir = os.path.abspath(args.out_dir)
    message = commit_message(args.files, mib, args.seed)
    started = time.monotonic()
    known = KNOWN_COMMITS.get((args.files, mib, args.seed))

    if not args.force and already_generated(out_dir, message, known):
        ignored = 0
        if not os.path.isdir(os.path.join(out_dir, "target")) or not os.path.isdir(os.path.join(out_dir, "node_modules")):
            ignored = write_ignored(out_dir, args.seed, args.ignored)
            print(f"gen-repo: restored {ignored} ignored files")
        print(f"gen-repo: {out_dir} already holds '{message}', clean: nothing to do")
        commit, _ = report(out_dir, started)
        check_known(known, commit)
        return
    if os.path.exists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        if not args.force:
            sys.exit(f"gen-repo: {out_dir} exists and is not this generator's clean repository "
                     f"('{message}'); pass --force to delete and regenerate it")
        shutil.rmtree(out_dir) if os.path.isdir(out_dir) else os.remove(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    started = time.monotonic()

    tree, crate_dirs, huge_paths = build_tree(args.files, args.seed)
    sizes = assign_sizes(tree, huge_paths, mib * MIB, args.seed)
    pools = Pools(args.seed)
    special = {
        ".gitignore": GITIGNORE,
        "tsconfig.json": '{\n  "compilerOptions": {\n    "target": "es2022",\n    "module": "nodenext",\n'
                         '    "strict": true\n  },\n  "files": []\n}\n',
        "Cargo.toml": gen_cargo_toml(Rng(seed_of("root-cargo", args.seed)), "monorepo", crate_dirs),
        "package.json": gen_package_json(Rng(seed_of("root-package", args.seed)), "monorepo"),
        "src/main.rs": MAIN_RS,
    }
    made = set()
    for path in sorted(tree.files):
        directory = os.path.dirname(path)
        if directory not in made:
            os.makedirs(os.path.join(out_dir, directory), exist_ok=True)
            made.add(directory)
        if path in special:
            data = special[path].encode()
        elif path.endswith("/.gitignore"):
            data = b"/out/\n*.tsbuildinfo\n"
        elif path.endswith("tsconfig.json"):
            data = TSCONFIG
        elif path.endswith("/Cargo.toml"):
            data = gen_cargo_toml(Rng(seed_of("cargo", args.seed, path)), path.split("/")[-2]).encode()
        elif path.endswith("/package.json"):
            data = gen_package_json(Rng(seed_of("package", args.seed, path)), "@mono/" + path.split("/")[-2]).encode()
        else:
            data = content_of(path, max(sizes[path], 64), pools, args.seed)
        with open(os.path.join(out_dir, path), "wb") as f:
            f.write(data)
    main_rs = open(os.path.join(out_dir, "src/main.rs")).read()
    assert main_rs.count("    run_server(config)") == 1
    wrote = time.monotonic()
    print(f"gen-repo: wrote {len(tree.files)} files in {wrote - started:.1f} s; committing")

    git(out_dir, "init", "-q", "-b", "main", "--template=")
    git(out_dir, "add", "-A")
    git(out_dir, "commit", "-q", "--no-verify", "-m", message)
    committed = time.monotonic()
    # Pack the objects as a clone would have them (and so no automatic gc starts in a benchmark).
    git(out_dir, "repack", "-a", "-d", "-q")
    print(f"gen-repo: git add and commit {committed - wrote:.1f} s, repack {time.monotonic() - committed:.1f} s")
    write_ignored(out_dir, args.seed, args.ignored)
    # Files written in the second the index was are "racily clean" (git compares whole seconds
    # here) and would make the first `git status` of a benchmark rewrite the whole index: a
    # refresh a second later settles it.
    time.sleep(1.1)
    git(out_dir, "update-index", "-q", "--refresh")
    if git(out_dir, "status", "--porcelain") != "":
        sys.exit("gen-repo: the ignored files show in git status")
    commit, count = report(out_dir, started)
    if count != args.files:
        sys.exit(f"gen-repo: {count} tracked files, not {args.files}")
    check_known(known, commit)


def check_known(known, commit):
    if known is None:
        print("gen-repo: (no known commit id for these arguments to compare with)")
    elif known == commit:
        print("gen-repo: the commit id is the known one")
    else:
        sys.exit(f"gen-repo: HEAD is {commit}, but these arguments are known to give {known}")


if __name__ == "__main__":
    main()
