//! The processor code was generated for, as text: `"ARCH-OS FLAG,FLAG,…"`,
//! the flags being the code generator's names of the instruction set
//! extensions it used (`has_sse41`, `has_popcnt`, …). A machine that lacks
//! one of them must not run the code (it would die on an illegal
//! instruction), so a library is refused there; this module tells, without
//! a code generator, which of them this processor has.

/// This program's architecture and operating system (`x86_64-linux`).
pub const TARGET: &str = if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
    "x86_64-linux"
} else if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
    "aarch64-linux"
} else if cfg!(all(target_arch = "aarch64", target_os = "macos")) {
    "aarch64-macos"
} else if cfg!(all(target_arch = "x86_64", target_os = "macos")) {
    "x86_64-macos"
} else {
    "other"
};

/// Whether this processor has the extension the code generator calls
/// `flag`. A flag that names no extension (a code generation setting) is
/// `None`: it asks nothing of the processor.
pub fn has(flag: &str) -> Option<bool> {
    Some(detect(flag.strip_prefix("has_")?))
}

#[cfg(target_arch = "x86_64")]
fn detect(feature: &str) -> bool {
    match feature {
        "sse3" => std::is_x86_feature_detected!("sse3"),
        "ssse3" => std::is_x86_feature_detected!("ssse3"),
        "cmpxchg16b" => std::is_x86_feature_detected!("cmpxchg16b"),
        "sse41" => std::is_x86_feature_detected!("sse4.1"),
        "sse42" => std::is_x86_feature_detected!("sse4.2"),
        "popcnt" => std::is_x86_feature_detected!("popcnt"),
        "avx" => std::is_x86_feature_detected!("avx"),
        "avx2" => std::is_x86_feature_detected!("avx2"),
        "fma" => std::is_x86_feature_detected!("fma"),
        "avx_vnni" => std::is_x86_feature_detected!("avxvnni"),
        "avx512vnni" => std::is_x86_feature_detected!("avx512vnni"),
        "bmi1" => std::is_x86_feature_detected!("bmi1"),
        "bmi2" => std::is_x86_feature_detected!("bmi2"),
        "avx512bitalg" => std::is_x86_feature_detected!("avx512bitalg"),
        "avx512dq" => std::is_x86_feature_detected!("avx512dq"),
        "avx512f" => std::is_x86_feature_detected!("avx512f"),
        "avx512vl" => std::is_x86_feature_detected!("avx512vl"),
        "avx512vbmi" => std::is_x86_feature_detected!("avx512vbmi"),
        "lzcnt" => std::is_x86_feature_detected!("lzcnt"),
        // An extension this Propel does not know: assume it is missing.
        _ => false,
    }
}

#[cfg(target_arch = "aarch64")]
fn detect(feature: &str) -> bool {
    match feature {
        "lse" => std::arch::is_aarch64_feature_detected!("lse"),
        "pauth" => std::arch::is_aarch64_feature_detected!("paca"),
        "fp16" => std::arch::is_aarch64_feature_detected!("fp16"),
        "dotprod" => std::arch::is_aarch64_feature_detected!("dotprod"),
        "i8mm" => std::arch::is_aarch64_feature_detected!("i8mm"),
        _ => false,
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect(_feature: &str) -> bool {
    false
}

/// The text for code generated for `target` with these flags.
pub fn describe<'a>(target: &str, flags: impl IntoIterator<Item = &'a str>) -> String {
    format!("{target} {}", flags.into_iter().collect::<Vec<_>>().join(","))
}

/// The extensions code described by `built` needs that this processor
/// lacks (empty: it runs here), or `Err` when it was built for another
/// target altogether.
pub fn missing(built: &str) -> Result<Vec<String>, String> {
    let (target, flags) = built.split_once(' ').unwrap_or((built, ""));
    if target != TARGET {
        return Err(target.to_string());
    }
    Ok(flags.split(',').filter(|f| !f.is_empty() && has(f) == Some(false)).map(String::from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_ask_nothing_and_unknown_extensions_are_missing() {
        assert_eq!(has("sign_return_address"), None);
        assert_eq!(has("has_no_such_extension"), Some(false));
        let built = describe(TARGET, ["has_no_such_extension", "use_bti"]);
        assert_eq!(missing(&built), Ok(vec!["has_no_such_extension".to_string()]));
        assert_eq!(missing(&describe(TARGET, [])), Ok(vec![]));
        assert!(missing("riscv99-plan9 has_x").is_err());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_machines_know_their_extensions() {
        // Every x86-64 processor has SSE2 (not a flag); SSE3 is near
        // universal, and `has` must agree with the standard library.
        assert_eq!(has("has_sse3"), Some(std::is_x86_feature_detected!("sse3")));
    }
}
