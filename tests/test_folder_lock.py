"""One process at a time holds a crawl's folder (``engine/folder_lock.py``): a second is refused, and the
lock goes with its holder however it ends, kill -9 included."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from engine.folder_lock import lock_folder
from tests.test_cluster_join import wait_until


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



def running(pid: int) -> bool:
    """Whether ``pid`` still runs: an exited orphan stays a zombie (state Z, its files closed) until the
    machine's init reaps it, which may take seconds or, with no init that reaps, forever."""
    with contextlib.suppress(FileNotFoundError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def test_the_agents_hold_the_folder_until_they_are_gone(tmp_path: Path) -> None:
    """The supervisor killed alone, its agents stop cleanly (a last checkpoint): until they have, the
    folder stays held, or a survivor adopting the machine would resume from files being written. The demo
    crawl's in-vitro web stops too, rather than serve on with nobody to crawl it."""
    out = tmp_path / "out"
    crawl = subprocess.Popen([sys.executable, "-m", "engine.cli", "run", "--out", str(out), "--processes", "2",
                              "--max-seconds", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        assert wait_until(lambda: all(any((out / "warc").glob(f"*-a{i}-*")) for i in (0, 1)), 60)
        agents = [int(pid) for pid in subprocess.run(["pgrep", "-P", str(crawl.pid), "-f", "engine.agent_process"],
                                                     capture_output=True, text=True).stdout.split()]
        assert len(agents) == 2, f"the crawl's agents: {agents}"
        webs = [int(pid) for pid in subprocess.run(["pgrep", "-P", str(crawl.pid), "-f", "bench.invitro"],
                                                   capture_output=True, text=True).stdout.split()]
        assert len(webs) == 1, f"the demo crawl's in-vitro web: {webs}"
        crawl.send_signal(signal.SIGKILL)
        crawl.wait(30)
        assert lock_folder(out) is None, "the supervisor is dead but its agents live: the folder is still held"
        assert wait_until(lambda: not any(running(pid) for pid in agents), 60), "the agents stop"
        assert wait_until(lambda: not running(webs[0]), 60), "the in-vitro web stops with the supervisor"
        assert lock_folder(out) is not None, "the supervisor and its agents gone, the folder is free"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(crawl.pid, signal.SIGKILL)
