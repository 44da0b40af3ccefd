from skulk.cli.units import layers_text, size_text


def test_sizes_are_binary_as_the_dashboard_shows_them() -> None:
    # The same figures as the dashboard's formatBytes test.
    assert size_text(0) == "0 B" and size_text(1023) == "1023 B"
    assert size_text(98_362_432) == "93.8 MiB"
    assert size_text(24_450_125_824) == "22.8 GiB"
    assert size_text(3 * 1024**2) == "3.00 MiB" and size_text(-5) == "0 B"


def test_layers_are_the_inclusive_range_people_count() -> None:
    assert layers_text(0, 15) == "layers 0–14" and layers_text(15, 30) == "layers 15–29"
    assert layers_text(3, 4) == "layer 3"
