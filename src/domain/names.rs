//! Generated names, as Magnum makes them when a client gives none.

use rand::Rng;

const GREEK: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi",
    "psi", "omega",
];

/// `<greek letter>-<1..24>-<suffix>`, e.g. `zeta-7-template`.
pub fn generate(suffix: &str) -> String {
    let mut rng = rand::thread_rng();
    let letter = GREEK[rng.gen_range(0..GREEK.len())];
    let number = rng.gen_range(1..=24);
    format!("{letter}-{number}-{suffix}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_names_have_magnums_shape() {
        let name = super::generate("template");
        let parts: Vec<&str> = name.split('-').collect();
        assert_eq!(parts.len(), 3, "{name}");
        assert!(super::GREEK.contains(&parts[0]));
        let n: u32 = parts[1].parse().expect("number");
        assert!((1..=24).contains(&n));
        assert_eq!(parts[2], "template");
    }
}
