//! The grader's checks of the compiled code, against NVRTC's real PTX: a kernel that reads a clock,
//! a performance monitor or the multiprocessor it runs on is found whatever C++ spelled the read,
//! and one that reads only its launch's shape is not; local memory and registers, which an
//! earlier launch leaves behind, are kept to one launch once confined and zeroed.

use course_tests::gpu_suite_runs;
use cuda_kernels::{
    Gpu, LaunchConfig, PushKernelArg,
    local_memory::{Unconfined, confined},
    special_registers::beyond_the_launch,
    zeroed_registers::at_each_entry,
};

#[test]
fn reads_beyond_the_launchs_shape_show_in_nvrtcs_ptx() {
    if !gpu_suite_runs("ptx-reads") {
        return;
    }
    let capability = Gpu::open().expect("gpu_suite_runs opened it").info().compute_capability;
    let ptx = |body: &str| {
        let file = format!("extern \"C\" __global__ void k(unsigned long long* out) {{\n{body}\n}}\n");
        exercises::check::text_ptx(capability, "reads.cu", &file).expect("compiles")
    };
    let shape = "unsigned lane; asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(lane));\n\
                 out[threadIdx.x + blockIdx.y * blockDim.x] = gridDim.x + lane;";
    assert_eq!(beyond_the_launch(&ptx(shape)), Vec::<String>::new());
    let machine = "unsigned sm; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n\
                   out[threadIdx.x] = clock64() + __pm0() + sm;";
    let mut found = beyond_the_launch(&ptx(machine));
    found.sort();
    assert_eq!(found, ["%clock64", "%pm0", "%smid"]);
}

/// Each thread counts its launches in a local word read before it is written (at an index the
/// compiler cannot follow, so the read stays) and in one past its array's end, and writes what
/// it read. Without confinement that is what an earlier launch left; confined, the word is zero
/// and the read past the end stays in the array, on its last word, just written: 1.
const COUNTS_LAUNCHES: &str = "\
__device__ __forceinline__ unsigned one() { return __popc(__activemask()) / 32u; }
extern \"C\" __global__ void counts(unsigned* out, unsigned) {
    unsigned seen[16];
    seen[0] = 0u;
    const unsigned before = seen[15u * one()];
    seen[15u * one()] = before + 1u;
    const unsigned past = seen[40u * one()];
    seen[40u * one()] = past + 1u;
    out[blockIdx.x * blockDim.x + threadIdx.x] = before + (past << 16);
}
";

/// A variable given a value only in a loop that runs `n` times: with `n` 0, what `unset` writes
/// is a register no instruction wrote; and a field no one set, passed to a function that does not
/// inline and returned (NVRTC passes neither), is what `unset_result` writes.
const UNSET: &str = "\
__device__ __forceinline__ unsigned one() { return __popc(__activemask()) / 32u; }
extern \"C\" __global__ void unset(unsigned* out, unsigned n) {
    unsigned last;
    for (unsigned i = 0; i < n * one(); ++i) last = 0x5eed0000u + i;
    out[blockIdx.x * blockDim.x + threadIdx.x] = last;
}
struct Pair { unsigned first, second; };
__device__ __noinline__ unsigned second_of(Pair pair) { return pair.second; }
extern \"C\" __global__ void unset_result(unsigned* out, unsigned n) {
    Pair pair;
    pair.first = n;
    out[blockIdx.x * blockDim.x + threadIdx.x] = second_of(pair);
}
";

/// `kernel` of `ptx` launched once for each of `ns`, on 1024 blocks of 256 threads, each writing
/// one word of `out`: `out` after each launch.
fn launched(gpu: &Gpu, ptx: String, kernel: &str, ns: &[u32]) -> Vec<Vec<u32>> {
    let config = LaunchConfig { grid_dim: (1024, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let function = gpu.module_from_ptx("launched.cu", ptx).unwrap().function(kernel).unwrap();
    let mut out = gpu.zeros::<u32>(1024 * 256).unwrap();
    ns.iter()
        .map(|n| {
            let mut launch = gpu.stream().launch_builder(&function);
            launch.arg(&mut out).arg(n);
            // SAFETY: the kernel takes (unsigned*, unsigned) and writes one word a thread: `out`
            // holds one a thread.
            unsafe { launch.launch(config) }.unwrap();
            gpu.download(&out).unwrap()
        })
        .collect()
}

#[test]
fn confined_local_memory_and_zeroed_registers_hold_nothing_from_an_earlier_launch() {
    if !gpu_suite_runs("ptx-reads") {
        return;
    }
    let gpu = Gpu::open().expect("gpu_suite_runs opened it");
    let ptx = |file: &str| exercises::check::text_ptx(gpu.info().compute_capability, "launched.cu", file).unwrap();
    // The hardware's side is shown rather than asserted: how many threads of a later launch read
    // what an earlier one left.
    let counts = ptx(COUNTS_LAUNCHES);
    let unconfined = launched(&gpu, counts.clone(), "counts", &[0, 0, 0]);
    let leftovers = unconfined[2].iter().filter(|&&word| word != 0).count();
    eprintln!(
        "unconfined local memory: {leftovers} of {} threads of a third launch read what an earlier one left",
        1024 * 256
    );
    for (launch, out) in launched(&gpu, confined(&counts).unwrap(), "counts", &[0, 0, 0]).iter().enumerate() {
        assert!(out.iter().all(|&word| word == 1 << 16), "confined launch {}: {:x?}", launch + 1, &out[..8]);
    }
    let unset = ptx(UNSET);
    let as_compiled = launched(&gpu, unset.clone(), "unset", &[4, 0]);
    let earlier = as_compiled[1].iter().filter(|&&word| word == 0x5eed_0003).count();
    let nonzero = as_compiled[1].iter().filter(|&&word| word != 0).count();
    eprintln!(
        "registers as compiled: a launch whose loop ran no time wrote the earlier launch's last value in {earlier} \
         of {} threads, something other than 0 in {nonzero}",
        1024 * 256
    );
    let zeroed = launched(&gpu, at_each_entry(&unset), "unset", &[4, 0]);
    assert!(zeroed[0].iter().all(|&word| word == 0x5eed_0003), "{:x?}", &zeroed[0][..8]);
    assert!(zeroed[1].iter().all(|&word| word == 0), "zeroed registers: {:x?}", &zeroed[1][..8]);
    let as_compiled = launched(&gpu, unset.clone(), "unset_result", &[4]);
    let nonzero = as_compiled[0].iter().filter(|&&word| word != 0).count();
    eprintln!("a result no one wrote, as compiled: something other than 0 in {nonzero} of {} threads", 1024 * 256);
    let zeroed = launched(&gpu, at_each_entry(&unset), "unset_result", &[4]);
    assert!(zeroed[0].iter().all(|&word| word == 0), "zeroed result: {:x?}", &zeroed[0][..8]);
    // A local array's address printed with `%p` is stored, and could be read back: refused.
    let printed = "extern \"C\" __global__ void k(unsigned* out) {\n    unsigned table[8];\n    \
                   for (unsigned i = 0; i < 8u; ++i) table[i] = out[i];\n    printf(\"%p\\n\", (void*)table);\n    \
                   out[threadIdx.x] = table[threadIdx.x % 8u];\n}\n";
    assert_eq!(confined(&ptx(printed)), Err(Unconfined::Pointer));
}
