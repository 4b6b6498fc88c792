from collections.abc import Callable

TAGS: tuple[str, ...]

def start_tags(data: bytes, unescape: Callable[[str], str], /) -> list[tuple[str, dict[str, str]]]: ...
