//! Kubernetes resource quantities (`500m`, `16`, `4505Mi`, `64Gi`, `2G`, `1E`, `1e3`) as numbers.
//!
//! Hand-written on purpose: the grammar (apimachinery's `resource.Quantity`) is a signed
//! number and one suffix: binary `Ki Mi Gi Ti Pi Ei`, decimal `n u m "" k M G T P E`, or a
//! decimal exponent `e<n>`/`E<n>`. `kube_quantity` 0.9 (the maintained crate) was tried and
//! rejects `1E` and `5Ei` (its float parser takes the `E` for an exponent), so it would
//! misread exa quantities the API server accepts.

/// Parses a quantity into base units (cores or bytes). `None` when it is not a quantity.
pub fn parse(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        // Divided, not multiplied by 1e-9: 100n is exactly 1e-7 that way.
        "n" => return finite(n / 1e9),
        "u" => return finite(n / 1e6),
        "m" => return finite(n / 1e3),
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "Pi" => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "Ei" => 1024f64.powi(6),
        s if s.starts_with('e') || s.starts_with('E') => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    finite(n * mult)
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn quantities() {
        assert_eq!(parse("500m"), Some(0.5));
        assert_eq!(parse("16"), Some(16.0));
        assert_eq!(parse("4505Mi"), Some(4505.0 * 1048576.0));
        assert_eq!(parse("2G"), Some(2e9));
        assert_eq!(parse("1e3"), Some(1000.0));
        assert_eq!(parse("lots"), None);
        assert_eq!(parse("5Qi"), None);
        assert_eq!(parse("1E"), Some(1e18));
        assert_eq!(parse("2Ei"), Some(2.0 * 1024f64.powi(6)));
        assert_eq!(parse("1E3"), Some(1000.0));
        assert_eq!(parse("100n"), Some(1e-7));
        assert_eq!(parse("250u"), Some(2.5e-4));
        assert_eq!(parse("1Ex"), None);
    }
}
