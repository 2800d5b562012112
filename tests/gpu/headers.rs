//! Every course header compiles as the course compiles a learner's file (NVRTC, by bare name),
//! and so does each example of use a header shows the book (its `ANCHOR: usage`, uncommented).

use course_tests::gpu_suite_runs;
use cuda_kernels::{Gpu, source};

#[test]
fn every_header_and_its_usage_compile_with_nvrtc() {
    if !gpu_suite_runs("headers") {
        return;
    }
    let capability = Gpu::open().expect("gpu_suite_runs opened it").info().compute_capability;
    let mut failed = Vec::new();
    for header in source::course_headers() {
        let text = source::load(header).expect("a course header").text;
        let usage: String = text
            .lines()
            .skip_while(|line| !line.contains("ANCHOR: usage"))
            .skip(1)
            .take_while(|line| !line.contains("ANCHOR_END: usage"))
            .map(|line| format!("{}\n", line.trim_start_matches("//").trim_start()))
            .collect();
        let file = format!("#include \"{header}\"\n{usage}extern \"C\" __global__ void uses_the_header() {{}}\n");
        if let Err(why) = exercises::check::text_ptx(capability, "uses-a-header.cu", &file) {
            failed.push(format!("{header}:\n{why}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
