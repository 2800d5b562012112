//! The grader's checks of the compiled code, against NVRTC's real PTX: a kernel that reads a clock,
//! a performance monitor or the multiprocessor it runs on is found whatever C++ spelled the read,
//! and one that reads only its launch's shape is not.

use course_tests::gpu_suite_runs;
use cuda_kernels::{Gpu, special_registers::beyond_the_launch};

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
