"""One process at a time holds a crawl's folder (``engine/folder_lock.py``): a second is refused, and the
lock goes with its holder however it ends, kill -9 included."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from engine.folder_lock import lock_folder


def test_a_folder_is_held_by_one_process_and_freed_by_its_death(tmp_path: Path) -> None:
    fd = lock_folder(tmp_path)
    assert fd is not None
    assert lock_folder(tmp_path) is None, "held: even this process's second try is refused"
    os.close(fd)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from engine.folder_lock import lock_folder; "
                               f"assert lock_folder(__import__('pathlib').Path({str(tmp_path)!r})) is not None; "
                               "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert lock_folder(tmp_path) is None, "held by another process"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    assert lock_folder(tmp_path) is not None, "its holder killed, the folder is free"
