//! A kernel's launch bounds, given after compiling: `__launch_bounds__` as PTX writes it. A kernel
//! is assembled for any block size; one that needs more registers a thread than a block of the
//! size it is launched with may have (64 in a block of 1024 threads) does not launch at all. Told
//! the block's shape, the assembler keeps within it, spilling what it must.

/// `ptx` with `.maxntid x, y, z` after `entry`'s parameters, or `None` if it has no such entry
/// or bounds of its own already.
pub fn within_block(ptx: &str, entry: &str, [x, y, z]: [u32; 3]) -> Option<String> {
    let header = ptx.find(&format!(".entry {entry}("))?;
    // The parameters end at the first line that closes them; bounds come before the body's `{`.
    let closed = header + ptx[header..].find("\n)")? + 2;
    let body = closed + ptx[closed..].find('{')?;
    let between = &ptx[closed..body];
    if between.contains(".maxntid") || between.contains(".reqntid") {
        return None;
    }
    Some(format!("{}\n.maxntid {x}, {y}, {z}{}", &ptx[..closed], &ptx[closed..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = ".version 9.0\n.target sm_90\n.address_size 64\n\n.visible .entry gemm(\n\
                          \t.param .u64 gemm_param_0,\n\t.param .u32 gemm_param_1\n)\n{\n\t.reg .b32 \t%r<4>;\n\tret;\n}\n";

    #[test]
    fn the_blocks_shape_goes_after_the_entrys_parameters() {
        let bounded = within_block(KERNEL, "gemm", [32, 32, 1]).expect("an entry");
        assert_eq!(bounded, KERNEL.replace("\n)\n{", "\n)\n.maxntid 32, 32, 1\n{"));
        assert_eq!(within_block(KERNEL, "other", [32, 32, 1]), None);
        assert_eq!(within_block(&bounded, "gemm", [32, 32, 1]), None);
        let required = KERNEL.replace("\n)\n{", "\n)\n.reqntid 256, 1, 1\n{");
        assert_eq!(within_block(&required, "gemm", [32, 32, 1]), None);
    }
}
