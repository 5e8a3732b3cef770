"""``LC0PY_CUDA_SCHED``: how a thread waiting on an NVIDIA device waits (host-side logic)."""

import pytest

from lc0py.errors import BackendOptionError
from lc0py.gpu.cuda_platform import context_schedule


@pytest.mark.parametrize(
    ("value", "flag"),
    [
        ("", None),
        ("  ", None),
        ("auto", "CU_CTX_SCHED_AUTO"),
        ("spin", "CU_CTX_SCHED_SPIN"),
        ("Yield", "CU_CTX_SCHED_YIELD"),
        (" blocking ", "CU_CTX_SCHED_BLOCKING_SYNC"),
    ],
)
def test_schedule_names_map_to_driver_flags(value: str, flag: str | None) -> None:
    assert context_schedule(value) == flag


def test_a_bad_schedule_is_one_line_naming_the_variable() -> None:
    with pytest.raises(BackendOptionError) as err:
        context_schedule("sleepy")
    text = str(err.value)
    assert "LC0PY_CUDA_SCHED" in text and "sleepy" in text and "\n" not in text
