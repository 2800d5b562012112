//! How much static shared memory (`__shared__` arrays) a compiled module declares, read from its
//! PTX: when the driver refuses a module, this says whether shared memory was the reason and by
//! how much, which the driver's error code alone does not. (A module whose kernels each use part
//! of its module-scope arrays may declare more in all than one block uses; the driver loaded one
//! whose tile of 2^31 - 1 words wrapped around in 32-bit shared addresses.)

use std::fmt;

use crate::ptx_text::closes_a_body;

/// Static shared memory a block may declare, on every GPU since Volta; more is only available
/// as dynamic shared memory, asked for at launch.
pub const STATIC_SHARED_LIMIT_BYTES: u64 = 48 * 1024;

/// The most static shared memory one kernel of the PTX declares: the `.shared` variables in its
/// body (where NVRTC puts a kernel's `__shared__` arrays) and those at module scope, which any
/// kernel may use. Dynamic `.extern .shared` arrays have no size here and are left out;
/// `.shared .align 4 .b8 tile[4224];` declares 4224 bytes.
pub fn declared_bytes(ptx: &str) -> u64 {
    let (mut module, mut kernels, mut depth) = (0u64, vec![0u64], 0usize);
    for line in ptx.lines() {
        if let Some(bytes) = declaration_bytes(line) {
            match depth {
                0 => module = bytes.saturating_add(module),
                _ => {
                    let kernel = kernels.last_mut().expect("one per body");
                    *kernel = kernel.saturating_add(bytes);
                }
            }
        }
        if closes_a_body(line, &mut depth) {
            kernels.push(0);
        }
    }
    module.saturating_add(kernels.into_iter().max().unwrap_or(0))
}

fn declaration_bytes(line: &str) -> Option<u64> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    if !tokens.contains(&".shared") || tokens.contains(&".extern") {
        return None;
    }
    let element_bits: u64 = tokens.iter().find_map(|token| {
        let kind = token.strip_prefix('.')?;
        let bits = kind.strip_prefix(['b', 'u', 's', 'f'])?;
        bits.parse().ok().filter(|bits| [8, 16, 32, 64].contains(bits))
    })?;
    let name = tokens.last()?.trim_end_matches(';');
    // `name[a][b]` holds a * b elements; a scalar, one. (A length past 64 bits counts as the most.)
    let elements = name
        .split('[')
        .skip(1)
        .map(|dim| dim.trim_end_matches(']').parse::<u64>().unwrap_or(u64::MAX))
        .fold(1u64, u64::saturating_mul);
    Some(elements.saturating_mul(element_bits) / 8)
}

/// A module whose static shared memory is over [`STATIC_SHARED_LIMIT_BYTES`]: what it declares
/// and what the GPU would give a block only as dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooMuchStaticShared {
    pub declared_bytes: u64,
    pub dynamic_limit_bytes: u64,
}

impl fmt::Display for TooMuchStaticShared {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "declares {} of static shared memory (`__shared__` arrays); a block may have at most {} of it \
             (this GPU gives a block up to {} only as dynamic shared memory, asked for at launch)",
            size(self.declared_bytes),
            size(STATIC_SHARED_LIMIT_BYTES),
            size(self.dynamic_limit_bytes)
        )
    }
}

/// `49152` as `48 KiB`, `327808` as `320.1 KiB`, `8589934588` as `8.0 GiB`.
fn size(bytes: u64) -> String {
    let (unit, scale) = match bytes {
        b if b >= 1 << 30 => ("GiB", 1u64 << 30),
        b if b >= 1 << 20 => ("MiB", 1 << 20),
        _ => ("KiB", 1 << 10),
    };
    match bytes % scale {
        0 => format!("{} {unit}", bytes / scale),
        _ => format!("{:.1} {unit}", bytes as f64 / scale as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Declarations as NVRTC 13.0 writes them for sm_90: the dynamic array (no size) and a scalar
    /// at module scope, each kernel's `__shared__` arrays in its body.
    const PTX: &str = "\
.version 9.0
.target sm_90
.address_size 64
.extern .shared .align 16 .b8 dynamic_words[];
.shared .align 4 .u32 counter;
.visible .entry transpose(
\t.param .u64 transpose_param_0
)
{
\t.reg .b32 \t%r<3>;
\t// demoted variable
\t.shared .align 4 .b8 _ZZ9transposeE4tile[4224];
\tld.shared.u32 \t%r1, [_ZZ9transposeE4tile];
\tst.shared.u32 \t[counter], %r1;
\tret;
}
.visible .entry pairs(
\t.param .u64 pairs_param_0
)
{
\t// demoted variable
\t.shared .align 8 .f64 _ZZ5pairsE1p[4][8];
\t// demoted variable
\t.shared .align 8 .b64 _ZZ5pairsE1q[2];
\tret;
}
";

    #[test]
    fn a_kernel_counts_its_arrays_by_element_size_and_dimensions_and_the_largest_kernel_is_reported() {
        // The larger kernel's arrays, and the module's scalar any kernel may use.
        assert_eq!(declared_bytes(PTX), 4224 + 4);
        assert_eq!(declared_bytes(&PTX.replace("[4224]", "[16]")), 4 * 8 * 8 + 2 * 8 + 4);
        assert_eq!(declared_bytes("\tld.shared.u32 \t%r1, [tile];"), 0, "an instruction is no declaration");
        // A tile of 2^31 - 1 words, which wraps around in 32-bit shared addresses, counts whole.
        assert_eq!(declared_bytes(&PTX.replace("[4224]", "[8589934588]")), 8589934588 + 4);
        assert!(declared_bytes(&PTX.replace("[4224]", "[99999999999999999999]")) > 1 << 60, "a length past 64 bits");
    }

    #[test]
    fn a_size_is_written_in_the_unit_it_is_read_in() {
        assert_eq!(
            [size(49152), size(327808), size(3 << 20), size(8589934588)],
            ["48 KiB", "320.1 KiB", "3 MiB", "8.0 GiB"]
        );
    }

    #[test]
    fn the_message_gives_the_declared_size_the_static_limit_and_the_dynamic_one() {
        let over = TooMuchStaticShared { declared_bytes: 32 * 2561 * 4, dynamic_limit_bytes: 232448 };
        assert_eq!(
            over.to_string(),
            "declares 320.1 KiB of static shared memory (`__shared__` arrays); a block may have at most 48 KiB \
             of it (this GPU gives a block up to 227 KiB only as dynamic shared memory, asked for at launch)"
        );
    }
}
