#!/usr/bin/env python3
"""Nsight Compute's shared-memory counters per kernel launch, read from its CSV.

Reads the output of

    ncu --print-units base --csv --metrics <the four metrics below> python3 python/numba_transpose.py --profile

from a file or from standard input (lines before ncu's CSV header, such as the program's own
output and ncu's ==PROF== lines, are skipped) and prints, per launch, the shared-memory
instructions, wavefronts and wavefronts per request of the loads and of the stores. A Numba
kernel and the C++ kernel of the same name are then compared.

Plain Python 3, no other packages.
"""

import argparse
import csv
import re
import sys
from dataclasses import dataclass, field

# What each counter is: (ld or st, instructions or wavefronts).
METRICS = {
    "smsp__sass_inst_executed_op_shared_ld.sum": ("ld", "instructions"),
    "smsp__sass_inst_executed_op_shared_st.sum": ("st", "instructions"),
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": ("ld", "wavefronts"),
    "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum": ("st", "wavefronts"),
}
HEADERS = ["kernel", "language", "st inst", "st wavefronts", "st wf/req", "ld inst", "ld wavefronts", "ld wf/req"]


@dataclass
class Launch:
    """One kernel launch: ncu's name for it and its four counters."""

    name: str
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def kernel_and_language(self) -> tuple[str, str]:
        """The kernel's own name, and "Numba" or "C++".

        The C++ kernels are `extern "C"`: ncu names them as written. Numba's are C++-mangled
        under their Python module, which ncu demangles to `__main__::name[abi:...](Array<...>)`.
        """
        if self.name.startswith("_ZN"):  # left mangled: _ZN8__main__16transpose_tile32B2v1...
            return mangled_names(self.name)[-1], "Numba"
        base = re.sub(r"\[[^\]]*\]", "", self.name.split("(", 1)[0])
        if "::" in base:
            return base.rsplit("::", 1)[1], "Numba"
        return base, "C++"

    def count(self, op: str, what: str) -> int:
        return self.counts[(op, what)]


def mangled_names(name: str) -> list[str]:
    """The nested names of an Itanium-mangled `_ZN<length><name>...` symbol."""
    names, rest = [], name[3:]
    while match := re.match(r"(\d+)", rest):
        length, start = int(match.group(1)), match.end()
        names.append(rest[start : start + length])
        rest = rest[start + length :]
    if not names:
        sys.exit(f"ncu_table.py: cannot read the kernel name {name}")
    return names


def csv_lines(text: str) -> list[str]:
    """ncu's CSV: from its header line on, without ncu's own `==PROF==` or `==WARNING==` lines."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        sys.exit(
            "ncu_table.py: no ncu CSV found (no line starting with \"ID\"): run ncu with --csv, "
            "as python/README.md shows"
        )
    return [line for line in lines[start:] if not line.startswith("==")]


def number(value: str, unit: str, metric: str) -> int:
    """A counter's value; ncu must print it in base units, since a scaled value is rounded."""
    if unit not in ("", "inst"):
        sys.exit(f"ncu_table.py: ncu printed {metric} in {unit!r}: run ncu with --print-units base")
    try:
        return int(value.replace(",", ""))
    except ValueError:
        sys.exit(f"ncu_table.py: {metric} has the value {value!r}, not a whole number")


def launches(text: str) -> list[Launch]:
    """Every launch in ncu's CSV, in launch order, with the four counters."""
    by_id: dict[str, Launch] = {}
    for row in csv.DictReader(csv_lines(text)):
        missing = [column for column in ("ID", "Kernel Name", "Metric Name", "Metric Value") if column not in row]
        if missing:
            sys.exit(f"ncu_table.py: ncu's CSV has no {', '.join(missing)} column")
        if row["Metric Name"] not in METRICS:
            continue
        launch = by_id.setdefault(row["ID"], Launch(row["Kernel Name"]))
        value = number(row["Metric Value"], row.get("Metric Unit", ""), row["Metric Name"])
        launch.counts[METRICS[row["Metric Name"]]] = value
    for launch_id, launch in by_id.items():
        lacking = [metric for metric, key in METRICS.items() if key not in launch.counts]
        if lacking:
            lacks = ", ".join(lacking)
            sys.exit(f"ncu_table.py: launch {launch_id} ({launch.name}) lacks {lacks}: pass all four to --metrics")
    if not by_id:
        sys.exit("ncu_table.py: ncu's CSV has none of the four shared-memory counters")
    return list(by_id.values())


def per_request(wavefronts: int, instructions: int) -> str:
    if instructions == 0:
        return "-"
    ratio = wavefronts / instructions
    return f"{ratio:.0f}" if ratio == round(ratio) else f"{ratio:.2f}"


def row(launch: Launch) -> list[str]:
    cells = list(launch.kernel_and_language())
    for op in ("st", "ld"):
        instructions, wavefronts = launch.count(op, "instructions"), launch.count(op, "wavefronts")
        cells += [f"{instructions:,}", f"{wavefronts:,}", per_request(wavefronts, instructions)]
    return cells


def format_table(headers: list[str], rows: list[list[str]], left: int = 2) -> str:
    """A table drawn as the course's lessons print theirs (`cargo xtask book` reads it back as
    HTML from book/src/measured/): the first `left` columns aligned left, the others right."""
    widths = [max(len(cells[i]) for cells in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        aligned = (c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
        return "│ " + " ┆ ".join(aligned) + " │"

    def rule(start: str, fill: str, middle: str, end: str) -> str:
        return start + middle.join(fill * (w + 2) for w in widths) + end

    return "\n".join(
        [rule("┌", "─", "┬", "┐"), line(headers), rule("╞", "═", "╪", "╡"), *map(line, rows), rule("└", "─", "┴", "┘")]
    )


def title(text: str) -> str:
    """A title as the lessons print one: underlined with `=`."""
    return f"{text}\n{'=' * len(text)}"


def comparison(all_launches: list[Launch]) -> tuple[list[str], bool]:
    """One line per kernel that runs in both languages, whether their counters are equal, and
    whether all of them are."""
    by_kernel: dict[str, dict[str, Launch]] = {}
    for launch in all_launches:
        kernel, language = launch.kernel_and_language()
        by_kernel.setdefault(kernel, {})[language] = launch
    lines, all_same = [], True
    for kernel, languages in by_kernel.items():
        if {"C++", "Numba"} <= languages.keys():
            same = languages["C++"].counts == languages["Numba"].counts
            all_same &= same
            verdict = "the same instructions and wavefronts" if same else "DIFFERENT counts (see the rows above)"
            lines.append(f"{kernel}: C++ and Numba, {verdict}.")
    return lines, all_same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="?", help="ncu's CSV output (default: standard input)")
    arguments = parser.parse_args()
    try:
        text = open(arguments.csv, encoding="utf-8").read() if arguments.csv else sys.stdin.read()
    except OSError as error:
        sys.exit(f"ncu_table.py: cannot read {arguments.csv}: {error}")
    found = launches(text)
    lines, all_same = comparison(found)
    print(title("Shared memory per launch (Nsight Compute)"))
    print(format_table(HEADERS, [row(launch) for launch in found]))
    print("\n".join(lines))
    if not all_same:
        sys.exit(1)


if __name__ == "__main__":
    main()
