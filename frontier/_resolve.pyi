from collections.abc import Callable
from typing import Any

def resolve_all(base: Any, hrefs: list[str], origin: Callable[[str, str], str | None], /) -> list[str | None]: ...
