//! The grader's checks of the compiled code, against NVRTC's real PTX: a kernel that reads a clock,
//! a performance monitor or the multiprocessor it runs on is found whatever C++ spelled the read,
//! and one that reads only its launch's shape is not; local memory, which an earlier launch
//! leaves behind, is kept to one launch once confined.

use course_tests::gpu_suite_runs;
use cuda_kernels::{
    Gpu, LaunchConfig, PushKernelArg,
    local_memory::{Unconfined, confined},
    special_registers::beyond_the_launch,
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
extern \"C\" __global__ void counts(unsigned* out) {
    unsigned seen[16];
    seen[0] = 0u;
    const unsigned before = seen[15u * one()];
    seen[15u * one()] = before + 1u;
    const unsigned past = seen[40u * one()];
    seen[40u * one()] = past + 1u;
    out[blockIdx.x * blockDim.x + threadIdx.x] = before + (past << 16);
}
";

#[test]
fn confined_local_memory_holds_nothing_from_an_earlier_launch() {
    if !gpu_suite_runs("ptx-reads") {
        return;
    }
    let gpu = Gpu::open().expect("gpu_suite_runs opened it");
    let ptx =
        exercises::check::text_ptx(gpu.info().compute_capability, "counts.cu", COUNTS_LAUNCHES).expect("compiles");
    let config = LaunchConfig { grid_dim: (1024, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let launches = |ptx: String| {
        let function = gpu.module_from_ptx("counts.cu", ptx).unwrap().function("counts").unwrap();
        let mut out = gpu.zeros::<u32>(1024 * 256).unwrap();
        (0..3)
            .map(|_| {
                let mut launch = gpu.stream().launch_builder(&function);
                launch.arg(&mut out);
                // SAFETY: `counts` takes (unsigned*) and writes one word a thread: `out` holds one a thread.
                unsafe { launch.launch(config) }.unwrap();
                gpu.download(&out).unwrap()
            })
            .collect::<Vec<_>>()
    };
    // The hardware's side, shown rather than asserted: how many threads of the third launch read
    // a word an earlier one left (a count past one, in the array or past its end).
    let unconfined = launches(ptx.clone());
    let leftovers = unconfined[2].iter().filter(|&&word| word != 0).count();
    eprintln!(
        "unconfined local memory: {leftovers} of {} threads of a third launch read what an earlier one left",
        unconfined[2].len()
    );
    for (launch, out) in launches(confined(&ptx).expect("confined")).iter().enumerate() {
        assert!(out.iter().all(|&word| word == 1 << 16), "confined launch {}: {:x?}", launch + 1, &out[..8]);
    }
    // A local array's address printed with `%p` is stored, and could be read back: refused.
    let printed = "extern \"C\" __global__ void k(unsigned* out) {\n    unsigned table[8];\n    \
                   for (unsigned i = 0; i < 8u; ++i) table[i] = out[i];\n    printf(\"%p\\n\", (void*)table);\n    \
                   out[threadIdx.x] = table[threadIdx.x % 8u];\n}\n";
    let ptx = exercises::check::text_ptx(gpu.info().compute_capability, "printed.cu", printed).expect("compiles");
    assert_eq!(confined(&ptx), Err(Unconfined::Pointer));
}
