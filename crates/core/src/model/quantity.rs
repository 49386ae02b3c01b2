//! Kubernetes resource quantities (`500m`, `16`, `4505Mi`, `64Gi`, `2G`) as numbers.

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
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "Pi" => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        s if s.starts_with('e') || s.starts_with('E') => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    let v = n * mult;
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
    }
}
