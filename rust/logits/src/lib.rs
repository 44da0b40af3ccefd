//! A greedy request's next token: the first highest of a row of logits, and whether the
//! row is finite (no NaN, no infinity), read once.
//!
//! The runner asks this once per greedy token, right after llama.cpp wrote the row. In
//! Python it took a numpy view of the row, an argmax and a min/max pass for the
//! finiteness check (three walks over 49k floats and three calls, 30-40 us a token on
//! these CPUs); here the walk is one, and vectorized.

/// Lanes walked side by side, so that the compiler keeps each in a vector register.
const LANES: usize = 16;

/// Whether `x` is neither NaN nor infinite, as integer operations on its bits (which
/// vectorize: `f32::is_finite` does too, but says so less plainly to the optimizer).
#[inline(always)]
fn finite(x: f32) -> bool {
    x.to_bits() & 0x7f80_0000 != 0x7f80_0000
}

/// The index of the first highest value of `row`, or `None` when the row is empty or
/// holds a NaN or an infinity (whose logits cannot be trusted).
pub fn greedy(row: &[f32]) -> Option<usize> {
    let mut highest = [f32::NEG_INFINITY; LANES];
    let mut all_finite = [true; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for lane in 0..LANES {
            let x = chunk[lane];
            all_finite[lane] &= finite(x);
            highest[lane] = if x > highest[lane] { x } else { highest[lane] };
        }
    }
    let mut top = f32::NEG_INFINITY;
    let mut ok = all_finite.iter().all(|&lane| lane);
    for &x in chunks.remainder() {
        ok &= finite(x);
        top = if x > top { x } else { top };
    }
    if !ok || row.is_empty() {
        return None;
    }
    for lane in highest {
        top = if lane > top { lane } else { top };
    }
    row.iter().position(|&x| x == top)
}

#[cfg(test)]
mod tests {
    use super::greedy;

    fn row(len: usize) -> Vec<f32> {
        (0..len)
            .map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0)
            .collect()
    }

    #[test]
    fn the_first_highest_is_found_in_the_lanes_and_in_the_remainder() {
        for len in [1, 15, 16, 17, 49_152, 49_159] {
            let mut values = row(len);
            for at in [0, len / 3, len - 1] {
                let before = values[at];
                values[at] = 100.0;
                assert_eq!(greedy(&values), Some(at), "len {len}, at {at}");
                values[at] = before;
            }
        }
    }

    #[test]
    fn a_tie_goes_to_the_first() {
        let mut values = row(1000);
        values[40] = 50.0;
        values[600] = 50.0;
        assert_eq!(greedy(&values), Some(40));
    }

    #[test]
    fn a_nan_or_an_infinity_anywhere_refuses_the_row() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            for at in [0, 16, 999, 1003] {
                let mut values = row(1004);
                values[at] = bad;
                assert_eq!(greedy(&values), None, "{bad} at {at}");
            }
        }
    }

    #[test]
    fn extremes_that_are_finite_pass() {
        let mut values = vec![f32::MIN; 40];
        values[33] = f32::MAX;
        assert_eq!(greedy(&values), Some(33));
        assert_eq!(greedy(&[f32::MIN; 17]), Some(0));
    }

    #[test]
    fn an_empty_row_has_no_token() {
        assert_eq!(greedy(&[]), None);
    }
}
