from pathlib import Path

import anyio

from skulk.fitting.decode_probe import PROBE_WIDTHS
from skulk.node_calibration import calibration_file, kept_calibration, measure_decode_calibration
from skulk.shared.types.telemetry import DecodeCalibration, WidthReadRate


def test_the_machine_measures_once_and_later_nodes_read_what_it_kept(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    measured = anyio.run(measure_decode_calibration, path)
    assert measured is not None
    assert sorted(measured.rates()) == sorted(PROBE_WIDTHS)
    assert kept_calibration(path) == measured
    # A later node reads the file rather than measuring: what is kept is what it gets.
    kept = DecodeCalibration(read_rates=[WidthReadRate(width=1024, bytes_per_second=1.0)],
                             layer_seconds=0.5)
    path.write_text(kept.model_dump_json())
    assert anyio.run(measure_decode_calibration, path) == kept


def test_a_damaged_file_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text("{not json")
    assert kept_calibration(path) is None
    assert kept_calibration(tmp_path / "absent.json") is None


def test_the_file_is_the_machines_for_this_boot() -> None:
    assert calibration_file() == calibration_file()
    assert calibration_file().name.startswith("skulk-decode-calibration-")
