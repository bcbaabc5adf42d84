#!/usr/bin/env python3
"""Turns a terminal screen captured with colours (`tmux capture-pane -e -p`) into an HTML page
that headless Chromium screenshots for the README pictures.

Usage: ansi_html.py SCREEN.ansi PAGE.html --cols N --rows N

Understands the SGR sequences tmux writes: reset, bold, dim, italic, underline, reverse, the 16
colours, 256-colour and 24-bit colours, and their resets. The page is exactly cols x rows cells
of DejaVu Sans Mono on Neovim's default dark background; `--print-size` prints the pixel size
the screenshot window needs.
"""

import argparse
import html
import re
import sys

FONT_PX = 14
CELL_W = 8.43  # DejaVu Sans Mono's advance at 14px
CELL_H = 17
PAD = 10
DEFAULT_FG = "#e0e2ea"  # Neovim's NvimLightGrey2
DEFAULT_BG = "#14161b"  # Neovim's NvimDarkGrey2

# The 16 colours of xterm's default palette.
BASIC = [
    "#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
    "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
]


def color256(n):
    if n < 16:
        return BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bg = None
        self.bold = self.dim = self.italic = self.underline = self.reverse = False

    def key(self):
        return (self.fg, self.bg, self.bold, self.dim, self.italic, self.underline, self.reverse)

    def css(self):
        fg, bg = self.fg or DEFAULT_FG, self.bg or DEFAULT_BG
        if self.reverse:
            fg, bg = bg, fg
        parts = ["color:" + fg]
        if bg != DEFAULT_BG:
            parts.append("background:" + bg)
        if self.bold:
            parts.append("font-weight:bold")
        if self.dim:
            parts.append("opacity:.6")
        if self.italic:
            parts.append("font-style:italic")
        if self.underline:
            parts.append("text-decoration:underline")
        return ";".join(parts)

    def apply(self, params):
        codes = [int(p) if p else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.reset()
            elif c == 1:
                self.bold = True
            elif c == 2:
                self.dim = True
            elif c == 3:
                self.italic = True
            elif c == 4:
                self.underline = True
            elif c == 7:
                self.reverse = True
            elif c == 22:
                self.bold = self.dim = False
            elif c == 23:
                self.italic = False
            elif c == 24:
                self.underline = False
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37:
                self.fg = BASIC[c - 30]
            elif 90 <= c <= 97:
                self.fg = BASIC[c - 90 + 8]
            elif 40 <= c <= 47:
                self.bg = BASIC[c - 40]
            elif 100 <= c <= 107:
                self.bg = BASIC[c - 100 + 8]
            elif c == 39:
                self.fg = None
            elif c == 49:
                self.bg = None
            elif c in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    value = color256(codes[i + 2])
                    i += 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    value = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                    i += 4
                else:
                    value = None
                if c == 38:
                    self.fg = value
                else:
                    self.bg = value
            i += 1


SGR = re.compile(r"\x1b\[([0-9;]*)m")
OTHER_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|\][^\x07]*\x07|[()][0-9A-Za-z])")


def line_html(line, style):
    """One screen line as spans; `style` carries over to the next line as tmux's output does."""
    out = []
    pos = 0
    run = []
    run_style = style.css()

    def flush():
        if run:
            out.append('<span style="%s">%s</span>' % (run_style, html.escape("".join(run))))
            run.clear()

    for m in SGR.finditer(line):
        text = OTHER_ESCAPE.sub("", line[pos:m.start()])
        run.append(text)
        style.apply(m.group(1))
        css = style.css()
        if css != run_style:
            flush()
            run_style = css
        pos = m.end()
    run.append(OTHER_ESCAPE.sub("", line[pos:]))
    flush()
    return "".join(out)


def page(screen, cols, rows):
    style = Style()
    lines = screen.split("\n")[:rows]
    body = "\n".join(line_html(line, style) for line in lines)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body {{ margin: 0; background: {DEFAULT_BG}; }}
pre {{ margin: 0; padding: {PAD}px; font: {FONT_PX}px/{CELL_H}px "DejaVu Sans Mono", monospace;
  color: {DEFAULT_FG}; width: {cols}ch; height: {rows * CELL_H}px; overflow: hidden; }}
/* Each run fills its cells' whole height, so backgrounds leave no stripes between lines. */
span {{ display: inline-block; height: {CELL_H}px; vertical-align: top; }}
</style></head><body><pre>{body}</pre></body></html>
"""


def size(cols, rows):
    return int(cols * CELL_W + 2 * PAD + 1), rows * CELL_H + 2 * PAD


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("screen")
    ap.add_argument("page")
    ap.add_argument("--cols", type=int, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--print-size", action="store_true")
    args = ap.parse_args()
    with open(args.screen, encoding="utf-8", errors="replace") as f:
        screen = f.read()
    with open(args.page, "w", encoding="utf-8") as f:
        f.write(page(screen, args.cols, args.rows))
    if args.print_size:
        w, h = size(args.cols, args.rows)
        sys.stdout.write(f"{w},{h}\n")


if __name__ == "__main__":
    main()
