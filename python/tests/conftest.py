"""Shared fixtures: the repository's bundled games and the public corpus
(../shared/games beside the repository; tests that need it skip with a
message when it is missing, and fail instead where PROPEL_NO_SKIP or CI is
set, as the Rust tests do)."""

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
GAMES = REPO / "games"
BUNDLED = ["tictactoe", "connect4", "breakthrough", "firewall", "hanoi", "dilemma", "trinim"]
CORPUS = REPO.parent / "shared" / "games"

# A fixed sample of corpus games of mixed kinds: one-player puzzles,
# two-player turn-taking games, simultaneous-move games, and games of three
# and six players (each builds in well under a second).
CORPUS_SAMPLE = [
    "base/blocksWorldSerial.kif",
    "base/lightsOn.kif",
    "base/futoshiki4.kif",
    "base/nonogram_5x5_1.kif",
    "base/queens06ug.kif",
    "base/sudokuGrade5.kif",
    "base/gt_centipede.kif",
    "base/2pffa.kif",
    "base/breakthroughSuicideSmall.kif",
    "base/checkLines.kif",
    "base/dualConnect4.kif",
    "base/nim3.kif",
    "base/chineseCheckers2.v1.kif",
    "base/coloredtrails.kif",
    "base/pentago.kif",
    "base/minichess.kif",
    "base/pawnWhopping.kif",
    "base/checkersTiny.v1.kif",
    "base/connectFourLarger.kif",
    "base/kalaha5x2x3.kif",
    "base/blockerSerial.kif",
    "base/gt_tinfoil.kif",
    "base/racetrackcorridor.v1.kif",
    "base/3pffa.kif",
    "base/ttcc4.kif",
    "base/chineseCheckers6.v1.kif",
]


def game_path(name: str) -> str:
    return str(GAMES / f"{name}.kif")


def missing(why: str):
    """Skips the test, or fails it where a missing file is an error (CI)."""
    if os.environ.get("PROPEL_NO_SKIP") or os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why, allow_module_level=True)


def need(module: str, why: str):
    """The module, imported; where it is not installed, as `missing`."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        missing(why)


def corpus_path(rel: str) -> str:
    if not CORPUS.is_dir():
        missing(f"the public game corpus is missing ({CORPUS} not found): corpus sample not checked")
    path = CORPUS / rel
    if not path.is_file():
        missing(f"{path} is missing from the corpus")
    return str(path)


def propel_binary():
    """The `propel` binary: $PROPEL_BIN, the workspace's target dirs, or the PATH."""
    import shutil

    candidates = [os.environ.get("PROPEL_BIN", "")]
    target = os.environ.get("CARGO_TARGET_DIR", str(REPO / "target"))
    candidates += [os.path.join(target, "debug", "propel"), os.path.join(target, "release", "propel")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return shutil.which("propel")
