//! The book's appendices, and the model's tables of "Which fix do I need?"
//! ([`quick_reference`]). "Claims, checked": statements about bank conflicts often heard in notes and interviews, each
//! put to the model as the warp instructions it is about. The book's appendix shows this table
//! beside the H100 measurements of the lessons that test each claim. "The rules, measured"
//! ([`rules_page`]): the model's rule classes against every instruction measured on the H100.

pub mod quick_reference;
mod rules_page;

pub use rules_page::rules_page;

use bank_model::{Matrices, Op, Request, WARP_SIZE, Width, swizzle::Swizzle};
use lesson_kit::Report;

/// One claim and the instructions that decide it.
pub struct Claim {
    pub statement: &'static str,
    /// Each instruction the claim is about, with how the source writes it.
    pub questions: Vec<(String, Request)>,
    /// The model's verdict, in a few words.
    pub verdict: &'static str,
    /// The lesson whose GPU run measures it.
    pub measured_in: u32,
}

/// Lane `lane` reads 16-byte vector `column` of row `lane` of `float tile[32][32]` under `swizzle`.
fn swizzled_float4_column(swizzle: Swizzle, column: u32) -> Request {
    Request::bytes(Op::Load, Width::W16, |lane| swizzle.apply(lane * 32 + 4 * column) * 4)
        .expect("vectors stay 16-byte aligned")
}

/// The Blelloch scan's up-sweep at offset 32 on 2048 words: threads 0-31 (warp 0) read word
/// `64t + 31`, stored at `layout(word)`.
fn scan_level_32(layout: fn(u32) -> u32) -> Request {
    let lanes = std::array::from_fn(|t| Some(4 * layout(64 * t as u32 + 31)));
    Request::new(Op::Load, Width::W4, lanes).expect("aligned")
}

/// Warp 0 of a 16 x 16 block reads its first tap of a `float` tile with rows `pitch` words apart:
/// lane `l` at row `l / 16`, column `l % 16`.
fn stencil_tap(pitch: u32) -> Request {
    Request::bytes(Op::Load, Width::W4, |lane| 4 * ((lane / 16) * pitch + lane % 16)).expect("aligned")
}

/// A radix-2 butterfly at stride 1: lane `t` of warp 0 stores its `float2` at element `2t`, kept
/// at `layout(2t)`.
fn fft_stride_1(layout: fn(u32) -> u32) -> Request {
    Request::bytes(Op::Store, Width::W8, |lane| 8 * layout(2 * lane)).expect("aligned")
}

/// An ldmatrix.x4 whose lane `l` gives the 16-byte row at byte `address(l)` (lanes 8i to 8i + 7
/// the rows of matrix i).
fn ldmatrix_x4(trans: bool, address: impl Fn(u32) -> u32) -> Request {
    Request::bytes(Op::LoadMatrix { matrices: Matrices::X4, trans }, Width::W16, address).expect("16-byte rows")
}

/// Lesson 14's A operand: warp 0's first ldmatrix.x4 of a bf16 tile with rows of 64 halves, lane
/// `l` giving row `l % 16`, halves `8 (l / 16)` on, at half offset `layout(row, column)`.
fn a_fragments(layout: impl Fn(u32, u32) -> u32) -> Request {
    ldmatrix_x4(false, |lane| 2 * layout(lane % 16, lane / 16 * 8))
}

/// CUTLASS issue 3172's read: an M-major 128 x 32 bf16 tile of CuTe atoms (128, 8), element
/// (m, k) at offset 1024 (k / 8) + 128 (k % 8) + m, swizzled; warp 0's first ldmatrix.x4.trans,
/// lane `l` giving the 8 halves of M from 8 ((l / 8) % 2) at k = l % 8 + 8 (l / 16).
fn m_major_fragments(swizzle: Swizzle) -> Request {
    ldmatrix_x4(true, |lane| {
        let (m, k) = ((lane / 8) % 2 * 8, lane % 8 + lane / 16 * 8);
        2 * swizzle.apply(1024 * (k / 8) + 128 * (k % 8) + m)
    })
}

/// A TMA box of 64-byte rows read as an mma A operand: lane `l` gives row `l % 16`, bytes
/// `16 (l / 16)` on, where the TMA put them with swizzle mode `span` (0 for NONE): rows padded to
/// the span, then Swizzle<B, 4, 3> on the byte offset (lesson 15 measures the rule).
fn tma_box_fragments(width: u32, span: u32) -> Request {
    let swizzle = match span {
        0 => Swizzle::IDENTITY,
        span => Swizzle::new((span / 16).ilog2(), 4, 3).expect("B <= 3"),
    };
    ldmatrix_x4(false, |lane| swizzle.apply(lane % 16 * width.max(span) + lane / 16 * 16))
}

fn question(source: impl Into<String>, request: Request) -> (String, Request) {
    (source.into(), request)
}

pub fn claims() -> Vec<Claim> {
    let stride = |stride| Request::strided(Op::Load, Width::W4, stride).expect("aligned");
    // Step s = 16 of an interleaved tree reduction: threads 0-15 of warp 0 read word 32t + 16.
    let tree_step: [Option<u32>; WARP_SIZE] =
        std::array::from_fn(|lane| (lane < 16).then_some(4 * (32 * lane as u32 + 16)));
    vec![
        Claim {
            statement: "A 32-way bank conflict makes an access 32x slower.",
            questions: vec![question("float tile[lane * 32]", stride(32)), question("float tile[lane]", stride(1))],
            verdict: "32 wavefronts against 1; the time depends on what limits the kernel",
            measured_in: 1,
        },
        Claim {
            statement: "`char tile[32][129]` is conflict-free.",
            questions: vec![
                question("char tile[32][129], column 0", Request::column(Width::W1, 129, 0)),
                question("char tile[32][132], column 0", Request::column(Width::W1, 132, 0)),
            ],
            verdict: "false: 4-way; pad to a whole odd number of words, [32][132]",
            measured_in: 2,
        },
        Claim {
            statement: "`double tile[32][33]` is conflict-free.",
            questions: vec![
                question("double tile[32][33], column 0", Request::column(Width::W8, 33, 0)),
                question("double tile[32][32], column 0", Request::column(Width::W8, 32, 0)),
            ],
            verdict: "true: 2 wavefronts, the ideal for 8-byte lanes",
            measured_in: 2,
        },
        Claim {
            statement: "A `float4` tile needs `float tile[32][36]`.",
            questions: vec![
                question(
                    "float4 of float tile[32][36] (9 float4 per row), column 0",
                    Request::column(Width::W16, 9, 0),
                ),
                question(
                    "float4 of float tile[32][32] (8 float4 per row), column 0",
                    Request::column(Width::W16, 8, 0),
                ),
                question(
                    "float4 of float tile[32][40] (10 float4 per row), column 0",
                    Request::column(Width::W16, 10, 0),
                ),
                question(
                    "float4 of float tile[32][32] under Swizzle<3, 2, 3>, column 0",
                    swizzled_float4_column(Swizzle::new(3, 2, 3).expect("valid"), 0),
                ),
            ],
            verdict: "true of padding: an odd number of 16-byte units per row; or no padding under a swizzle",
            measured_in: 2,
        },
        Claim {
            statement: "In a tree reduction, threads 0 and 32 conflict.",
            questions: vec![question(
                "interleaved step s = 16, warp 0: tile[32t + 16], t < 16",
                Request::new(Op::Load, Width::W4, tree_step).expect("aligned"),
            )],
            verdict: "false: only lanes of one warp's request conflict; 0 and 32 are in different warps",
            measured_in: 6,
        },
        Claim {
            statement: "Padding always helps.",
            questions: vec![
                question("float As[32][32], all lanes read As[ty][k..k+3] (float4)", {
                    Request::new(Op::Load, Width::W16, [Some(0); WARP_SIZE]).expect("aligned")
                }),
                question("float As[32][33], all lanes read As[ty][k] (float)", {
                    Request::new(Op::Load, Width::W4, [Some(0); WARP_SIZE]).expect("aligned")
                }),
            ],
            verdict: "false: a broadcast has no conflict to remove, and a pad of one float breaks 16-byte loads",
            measured_in: 5,
        },
        Claim {
            statement: "The ncu bank-conflict counter is exact.",
            questions: vec![question(
                "float tile[32][33], column 0 (the padded transpose)",
                Request::column(Width::W4, 33, 0),
            )],
            verdict: "false: the model and the sass counters say 0 excess; the l1tex counter reports some under load",
            measured_in: 3,
        },
        Claim {
            statement: "An array of structs causes bank conflicts; use a struct of arrays.",
            questions: vec![
                question("struct of 3 floats, field x: tile[3 * lane]", stride(3)),
                question("struct of 4 floats, field x: tile[4 * lane]", stride(4)),
                question(
                    "struct of 4 floats read whole: float4 tile[lane]",
                    Request::strided(Op::Load, Width::W16, 1).expect("aligned"),
                ),
                question("struct of arrays, x[lane]", stride(1)),
            ],
            verdict: "only for an even number of words, gcd(words, 32)-way; a whole-struct load is ideal",
            measured_in: 10,
        },
        Claim {
            statement: "The offset `i + (i >> 5)` makes the work-efficient scan conflict-free.",
            questions: vec![
                question("2048-word scan, offset 32, warp 0: tile[64t + 31]", scan_level_32(|i| i)),
                question("the same with i + (i >> 5)", scan_level_32(|i| i + (i >> 5))),
                question("the same with i + (i >> 5) + (i >> 10)", scan_level_32(|i| i + (i >> 5) + (i >> 10))),
            ],
            verdict: "not above 1024 words: 2-way at five levels; the two-level offset removes them",
            measured_in: 11,
        },
        Claim {
            statement: "Stride-32 often maps cleanly.",
            questions: vec![
                question("float tile[lane * 32]", stride(32)),
                question("float tile[lane * 33]", stride(33)),
            ],
            verdict: "false for 4-byte elements: every lane in one bank, 32-way; an odd stride is clean",
            measured_in: 1,
        },
        Claim {
            statement: "Shared-memory latency is about 20 cycles on V100, A100 and H100.",
            questions: vec![question("one step of a dependent chain: float tile[lane]", stride(1))],
            verdict: "1 wavefront; the model counts wavefronts, not cycles: the latency is the H100's to say",
            measured_in: 1,
        },
        Claim {
            statement: "A stencil's halo tile `float tile[34][34]` needs `[34][35]`.",
            questions: vec![
                question("32 x 8 block, warp 0, tap (0, 0): tile[0][lane], pitch 34", stride(1)),
                question("16 x 16 block, warp 0, tap (0, 0): pitch 34", stencil_tap(34)),
                question("the same, pitch 35", stencil_tap(35)),
                question("the same, pitch 48", stencil_tap(48)),
            ],
            verdict: "false: a warp on one row never conflicts; two rows conflict unless the pitch is 16 mod 32",
            measured_in: 12,
        },
        Claim {
            statement: "`float2 shared[512 + 16]` removes an FFT's bank conflicts.",
            questions: vec![
                question("512-point radix-2 FFT, stride 1, warp 0 stores a = 2t: shared[a]", fft_stride_1(|i| i)),
                question("the same padded, shared[a + a / 32]", fft_stride_1(|i| i + i / 32)),
                question(
                    "the same mirrored, shared[a ^ ((a >> 4 & 1) * 15)]",
                    fft_stride_1(|i| i ^ ((i >> 4 & 1) * 15)),
                ),
            ],
            verdict: "false: the conflicts lie within runs of 32 elements, which the padding shifts whole",
            measured_in: 13,
        },
        Claim {
            statement: "Tensor-core kernels bypass bank conflicts through register tiling.",
            questions: vec![
                question(
                    "ldmatrix.x4 of A, rows of 64 halves: tile[row * 64 + column]",
                    a_fragments(|r, c| r * 64 + c),
                ),
                question("the same padded: tile[row * 72 + column]", a_fragments(|r, c| r * 72 + c)),
                question(
                    "the same with Swizzle<3, 3, 3>",
                    a_fragments(|r, c| Swizzle::new(3, 3, 3).expect("valid").apply(r * 64 + c)),
                ),
            ],
            verdict: "false: every operand still passes through ldmatrix, 8-way on unpadded 128-byte rows",
            measured_in: 14,
        },
        Claim {
            statement: "A CuTe `Swizzle<3, 3, 4>` M-major tile read with `ldmatrix.x4.trans` still conflicts (CUTLASS #3172).",
            questions: vec![
                question(
                    "M-major atom (128, 8), Swizzle<3, 3, 4>",
                    m_major_fragments(Swizzle::new(3, 3, 4).expect("valid")),
                ),
                question("the same with Swizzle<3, 3, 3>", m_major_fragments(Swizzle::new(3, 3, 3).expect("valid"))),
                question("the same unswizzled", m_major_fragments(Swizzle::IDENTITY)),
            ],
            verdict: "not on the H100: Swizzle<3, 3, 4> is conflict-free there; one bit short, <3, 3, 3>, is 2-way",
            measured_in: 14,
        },
        Claim {
            statement: "Every TMA swizzle mode is conflict-free on both the write and the MMA read side; swizzling only \
                        raises TMA throughput.",
            questions: vec![
                question("ldmatrix.x4 of a box of 128-byte rows, swizzle NONE", tma_box_fragments(128, 0)),
                question("the same, 128B", tma_box_fragments(128, 128)),
                question("a box of 64-byte rows, NONE", tma_box_fragments(64, 0)),
                question("the same, 64B", tma_box_fragments(64, 64)),
                question("a box of 32-byte rows, NONE", tma_box_fragments(32, 0)),
            ],
            verdict: "false: NONE is 8-, 4-, 2-way on the read side; the TMA's writes are no LSU wavefronts",
            measured_in: 15,
        },
    ]
}

/// The appendix's table: every claim's instructions and what the model says of each.
pub fn model_page() -> String {
    let mut report = Report::default();
    let rows = claims()
        .into_iter()
        .enumerate()
        .flat_map(|(number, claim)| {
            claim.questions.into_iter().enumerate().map(move |(index, (source, request))| {
                let analysis = request.analyze();
                // The claim's number and verdict once, on its first row.
                let (number, verdict) =
                    if index == 0 { ((number + 1).to_string(), claim.verdict) } else { (String::new(), "") };
                vec![
                    number.into(),
                    source.into(),
                    analysis.wavefronts.into(),
                    analysis.ideal.into(),
                    analysis.excess.into(),
                    verdict.into(),
                ]
            })
        })
        .collect();
    report.table(["claim", "instruction", "wavefronts", "ideal", "excess", "the model's verdict"], rows);
    report.render_markdown()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wavefronts of each claim's instructions, in order.
    fn wavefronts(number: usize) -> Vec<u32> {
        claims()[number - 1].questions.iter().map(|(_, r)| r.analyze().wavefronts).collect()
    }

    #[test]
    fn the_verdicts_follow_from_the_model() {
        assert_eq!(wavefronts(1), [32, 1]);
        assert_eq!(wavefronts(2), [4, 1], "char [32][129] is 4-way, [32][132] conflict-free");
        assert_eq!(wavefronts(3), [2, 32], "double [32][33] is at the 8-byte ideal");
        assert_eq!(wavefronts(4), [4, 32, 8, 4], "an odd number of 16-byte units per row, or a swizzle");
        assert_eq!(wavefronts(5), [16], "16 lanes of warp 0 in one bank");
        assert_eq!(wavefronts(6), [2, 1]);
        assert_eq!(wavefronts(7), [1]);
        assert_eq!(wavefronts(8), [1, 4, 4, 1], "3 words never conflict, 4 do unless read whole");
        assert_eq!(wavefronts(9), [32, 2, 1]);
        assert_eq!(wavefronts(10), [32, 1], "stride 32 puts every lane in bank 0");
        assert_eq!(wavefronts(11), [1], "the chain's step is conflict-free: its time is latency");
        assert_eq!(wavefronts(12), [1, 2, 2, 1], "one row is clean at any pitch; two rows need pitch 16 mod 32");
        assert_eq!(wavefronts(13), [4, 4, 2], "the padding shifts runs of 32, the conflict is inside one");
        assert_eq!(wavefronts(14), [32, 4, 4], "unpadded rows of 128 bytes put a matrix's 8 rows in 4 banks");
        assert_eq!(wavefronts(15), [4, 8, 32], "<3, 3, 4> spreads the 8 k-rows over 8 columns of 16 bytes");
        assert_eq!(wavefronts(16), [32, 4, 16, 4, 8], "rows of 32, 64, 128 bytes: 2-, 4-, 8-way unswizzled");
        for claim in claims() {
            let lesson = course::LESSONS.iter().find(|lesson| lesson.number() == claim.measured_in);
            assert!(lesson.is_some(), "{}: no lesson {}", claim.statement, claim.measured_in);
        }
    }

    /// Claims 10 and 11 quote lesson 1's H100 run; the numbers the appendix quotes are in it.
    #[test]
    fn claims_10_and_11_quote_lesson_1s_h100_run() {
        let run = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/src/measured/lesson-01-h100.txt"),
        )
        .unwrap();
        let row = |start: &str| {
            let line = run.lines().find(|line| line.replace(' ', "").starts_with(start)).unwrap();
            line.split('┆').map(|cell| cell.trim().trim_start_matches('│').trim().to_owned()).collect::<Vec<_>>()
        };
        // Throughput-bound, float: stride 32 and 64 at 32 wavefronts, 31.5x; stride 33 at 1, 1.0x.
        for (stride, ncu, ratio) in [("32", "32 ✓", "31.5x"), ("64", "32 ✓", "31.5x"), ("33", "1 ✓", "1.0x")] {
            let cells = row(&format!("│float┆{stride}┆"));
            assert_eq!((cells[3].as_str(), cells[6].as_str()), (ncu, ratio), "float stride {stride}");
        }
        // The chain: 17.1 ns per load at stride 1, 48.4 at stride 32, at 1980 MHz.
        assert!(run.contains("1980 MHz"));
        let chain = |stride: &str| row(&format!("│{stride}┆")).get(3).unwrap().parse::<f64>().unwrap();
        assert_eq!((chain("1"), chain("32")), (17.1, 48.4));
        assert_eq!((17.1f64 * 1.98).round(), 34.0);
        assert_eq!((48.4f64 * 1.98).round(), 96.0);
    }

    #[test]
    fn the_page_has_a_row_per_instruction() {
        let rows = claims().iter().map(|c| c.questions.len()).sum::<usize>();
        assert_eq!(model_page().lines().filter(|l| l.starts_with("<tr><td")).count(), rows, "a row per instruction");
    }
}
