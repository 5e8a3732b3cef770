"""Line plots for the benchmark tools (``backendbench --plot``, ``attnbench --plot``) with matplotlib.

matplotlib is optional (the ``plot`` extra): :func:`pyplot` imports it with the file-only ``Agg``
backend (no display needed) or raises one ``UsageError`` line saying how to install it, so a
tool can check before it spends minutes measuring.
"""

from __future__ import annotations

from typing import Any

from lc0py.errors import UsageError

INSTALL_HINT = "pip install 'lc0py[plot]'"


def pyplot(flag: str = "--plot") -> Any:
    """``matplotlib.pyplot`` on the ``Agg`` backend, or ``UsageError`` if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(f"{flag}: matplotlib is not installed ({INSTALL_HINT})") from None
    return plt


def line_plot(
    series: dict[str, list[tuple[float, float]]],
    path: str,
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    log_x: bool = False,
    log_y: bool = False,
    spread: dict[str, list[tuple[float, float, float]]] | None = None,
) -> None:
    """One marked line per ``series`` entry (label -> ``(x, y)`` points), saved to ``path``.
    ``spread`` (label -> ``(x, low, high)``) draws an error bar from ``low`` to ``high`` at ``x``."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    try:
        for i, (label, points) in enumerate(series.items()):
            pts = sorted(points)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-", color=f"C{i % 10}", marker="o", ms=3,
                    label=label)
            bars = sorted((spread or {}).get(label, []))
            if bars:
                mids = dict(pts)
                ax.errorbar([b[0] for b in bars], [mids.get(b[0], (b[1] + b[2]) / 2) for b in bars],
                            yerr=[[max(mids.get(b[0], b[1]) - b[1], 0.0) for b in bars],
                                  [max(b[2] - mids.get(b[0], b[2]), 0.0) for b in bars]],
                            fmt="none", ecolor=f"C{i % 10}", capsize=3, alpha=0.7)
        if log_x:
            ax.set_xscale("log", base=2)
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        if len(series) > 1:
            ax.legend(fontsize=8)
        fig.tight_layout()
        try:
            fig.savefig(path, dpi=120)
        except OSError as exc:
            raise UsageError(f"--plot {path}: cannot write: {exc}") from None
    finally:
        plt.close(fig)
