"""Programmatic dependent launch: every kernel waits for the one before it, and ``pdl=`` is checked.

With ``Platform.dependent_launch`` on, a kernel may be scheduled while the kernel before it in the
stream still runs. That is only safe because each kernel's first statement is
``lc0_grid_dependency_sync()`` (``griddepcontrol.wait`` on sm_90+): a kernel that read its input,
or wrote anything, before it would race with its producer. The one exception is a kernel whose
first statement is ``lc0_weights_before_wait()``: it loads the net's weights (which no kernel
writes) before it waits, so their latency overlaps the kernel before, and it must still wait
before anything else. The first test holds every kernel in ``lc0py/kernels`` to that; the PTX
test checks the instruction is really emitted for sm_90 and not for sm_80 (where the launch
attribute does nothing). The rest: ``pdl=`` parses, ``auto`` follows the platform, and ``pdl=on``
where the platform has no such launch is one line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lc0py.backends.gpu.network import dependent_launch
from lc0py.backends.gpu.options import GpuOptions
from lc0py.errors import BackendOptionError
from lc0py.gpu.compile_cache import kernel_dir, read_headers

SYNC = "lc0_grid_dependency_sync();"
WEIGHTS_FIRST = "lc0_weights_before_wait();"


def _kernel_bodies(source: str) -> list[tuple[str, str]]:
    """(name, body text after the opening brace) of each ``__global__`` function in ``source``."""
    found = []
    for match in re.finditer(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(", source):
        brace = source.index("{", match.end())
        found.append((match.group(1), source[brace + 1 :]))
    return found


def _first_statement(body: str) -> str:
    lines = (line.split("//")[0].strip() for line in body.splitlines())
    return next(line for line in lines if line)


def _before_wait(body: str) -> str:
    """The code of a ``lc0_weights_before_wait()`` kernel before its wait ('' without a wait)."""
    end = body.find(SYNC)
    return body[:end] if end >= 0 else ""


def _stores_before_wait(code: str) -> list[str]:
    """Lines of ``code`` that write through a pointer or into shared memory (``x[i] = ``,
    ``*p = ``, ``store_*``/``atomic`` calls), other than into the kernel's own register arrays
    (declared there: ``float g[PT];``): none may come before the wait."""
    local = {
        name
        for decl in re.findall(r"\b(?:float|uint4|int|u32)\s+([^;=]*\[[^;=]*);", code)
        for name in re.findall(r"(\w+)\s*\[", decl)
    }
    found = []
    for line in code.splitlines():
        text = line.split("//")[0]
        target = re.match(r"\s*(\w+)\s*\[[^=]*\]\s*=[^=]", text)
        if target and target.group(1) in local:
            continue
        if re.search(r"\bstore_\w*\(|atomic|\*\w+\s*=[^=]|\]\s*=[^=]", text):
            found.append(text.strip())
    return found


def test_every_kernel_waits_for_its_producer_first() -> None:
    sources = sorted(kernel_dir().glob("*.hip"))
    kernels = [(path.name, name, body) for path in sources for name, body in _kernel_bodies(path.read_text())]
    assert len(kernels) >= 30  # every .hip file's kernels were found
    late = [
        f"{file}:{name}"
        for file, name, body in kernels
        if _first_statement(body) != SYNC
        and not (_first_statement(body) == WEIGHTS_FIRST and _before_wait(body))
    ]
    assert not late, f"kernels that do not start with {SYNC} (or {WEIGHTS_FIRST} and wait later): {late}"
    early = {
        f"{file}:{name}": _before_wait(body)
        for file, name, body in kernels
        if _first_statement(body) == WEIGHTS_FIRST
    }
    assert early, "no kernel loads its weights before the wait"  # dense_rows
    for kernel, code in early.items():
        # no activations: the row kernels' inputs are named x (and pre, their scratch)
        assert not re.search(r"(?<![\w.])(x|pre)\s*[\[+]", code), f"{kernel} reads an input before its wait"
        assert not _stores_before_wait(code), f"{kernel} writes before its wait: {_stores_before_wait(code)}"


def test_weights_first_scan_finds_a_store() -> None:
    """The store check above can fail: a write to a pointer before the wait is found."""
    code = "    lc0_weights_before_wait();\n    out[0] = w[0];\n    " + SYNC + "\n"
    assert _stores_before_wait(_before_wait(code)) == ["out[0] = w[0];"]


def test_body_scan_finds_a_late_wait() -> None:
    """The scan above can fail: a kernel that loads before it waits is reported."""
    head = 'extern "C" __global__ void k(const float* x, float* y) {\n'
    src = head + "    float v = x[0];\n    " + SYNC + "\n}\n"
    ((name, body),) = _kernel_bodies(src)
    assert name == "k" and _first_statement(body) == "float v = x[0];"
    # a kernel with launch bounds is named by its own name
    bounded = 'extern "C" __global__ void __launch_bounds__(128)\nkern(int n) {\n    ' + SYNC + "\n}\n"
    assert [n for n, _ in _kernel_bodies(bounded)] == ["kern"]


def _ptx(arch: str) -> str:
    pytest.importorskip("cuda.bindings.nvrtc")
    from lc0py.gpu.cuda_platform import nvrtc_compile

    kd: Path = kernel_dir()
    src = (kd / "elementwise.hip").read_text()
    return nvrtc_compile(src, "elementwise.hip", [], read_headers(kd), f"-arch={arch}", "ptx").decode()


def test_sm90_ptx_waits_and_sm80_does_not() -> None:
    sm90 = _ptx("compute_90")
    assert "griddepcontrol.wait" in sm90 and "griddepcontrol.launch_dependents" in sm90
    assert "griddepcontrol" not in _ptx("compute_80")


class _Platform:
    def __init__(self, problem: str | None) -> None:
        self.problem = problem

    def dependent_launch_problem(self) -> str | None:
        return self.problem


@pytest.mark.parametrize(
    ("text", "problem", "expected"),
    [
        ("", None, True),
        ("pdl=auto", None, True),
        ("pdl=on", None, True),
        ("pdl=off", None, False),
        ("", "no such launch here", False),
        ("pdl=off", "no such launch here", False),
    ],
)
def test_pdl_option_follows_the_platform(text: str, problem: str | None, expected: bool) -> None:
    options = GpuOptions.from_text(text, "cuda-fp16")
    assert dependent_launch(options, _Platform(problem)) is expected  # type: ignore[arg-type]


def test_pdl_on_without_the_launch_is_one_line() -> None:
    options = GpuOptions.from_text("pdl=on", "cuda-fp16")
    with pytest.raises(BackendOptionError, match=r"^--backend-opts: pdl=on: sm_80 has none$"):
        dependent_launch(options, _Platform("sm_80 has none"))  # type: ignore[arg-type]


def test_pdl_bad_value_is_one_line() -> None:
    with pytest.raises(BackendOptionError, match="pdl='sometimes' is not one of on, off, auto"):
        GpuOptions.from_text("pdl=sometimes", "cuda-fp16")
