//! Lesson 10: arrays of structs, structs of arrays.
//!
//! Lane `l` of a warp reads element `l` of an array of structs of `k` 4-byte fields. In an array
//! of structs (AoS) the lanes reading one field are `k` words apart: `gcd(k, 32)` wavefronts, so
//! an odd `k` (a 12-byte `float3`) is conflict-free and `k` = 2, 4, 8 cost 2, 4, 8. In a struct of
//! arrays (SoA) every field read is one wavefront. An AoS element read whole, with the widest
//! loads that divide it, takes the ideal wavefronts too, unless those loads sit an even number of
//! their widths apart (lesson 7's rule): a 32-byte struct read as two 16-byte loads.

use bank_model::{Op, Request, WARP_SIZE, WAVEFRONT_BYTES, Width};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    DeclaredAccess, KernelRun, Lesson, Prepared, Report, RunSize, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, format_ratio, grouped, median_cell, spread_cell},
    styled,
    words_kernel::{
        Launch, WordsLaunch, WordsRun, fill_tile_access, loaded_value, prepare_words, random_words, repeated_sum,
        words_runs,
    },
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "struct_layout.cu";
/// Threads per block, and elements per block: thread `t` reads element `t` (`THREADS` in the kernels).
pub const THREADS: u32 = 1024;
/// Fields per element in the model's table.
pub const MODEL_FIELDS: [u32; 10] = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16];
/// The runs, family by family: a 4-field particle, a 3-field struct, an 8-field struct; each read
/// from an array of structs field by field, from a struct of arrays, and from an array of structs
/// whole.
pub const RUN_READS: [Read; 9] = [
    Read::AosFields { fields: 4 },
    Read::SoaFields { fields: 4 },
    Read::AosWhole { fields: 4, words: 4 },
    Read::AosFields { fields: 3 },
    Read::SoaFields { fields: 3 },
    Read::AosWhole { fields: 3, words: 4 },
    Read::AosFields { fields: 8 },
    Read::SoaFields { fields: 8 },
    Read::AosWhole { fields: 8, words: 8 },
];
/// The headline figures: each divides the times of two runs that read the same fields.
const FIGURES: [TimeRatio; 4] = [
    TimeRatio {
        key: "aos4_fields_vs_soa",
        label: "4-field particle read field by field, AoS time over SoA",
        numerator: "AoS 4 fields, 4 loads of 4 B",
        denominator: "SoA 4 fields, 4 loads of 4 B",
    },
    TimeRatio {
        key: "aos4_vector_vs_soa",
        label: "4-field particle, AoS read as one 16-byte load, time over SoA read field by field",
        numerator: "AoS 4 fields, 1 load of 16 B",
        denominator: "SoA 4 fields, 4 loads of 4 B",
    },
    TimeRatio {
        key: "aos3_fields_vs_soa",
        label: "3-field struct read field by field, AoS time over SoA",
        numerator: "AoS 3 fields, 3 loads of 4 B",
        denominator: "SoA 3 fields, 3 loads of 4 B",
    },
    TimeRatio {
        key: "aos3_padded_vector_vs_fields",
        label: "3-field struct padded to 16 B and read as one 16-byte load, time over 3 field loads (AoS)",
        numerator: "AoS 3 fields padded to 4, 1 load of 16 B",
        denominator: "AoS 3 fields, 3 loads of 4 B",
    },
];

/// The widest load that reads an element of `words` 4-byte words whole in equal aligned parts
/// (the element aligned to it): 16 bytes for a multiple of 4 words, 8 for an even number, else 4.
pub fn widest_load(words: u32) -> Width {
    match words {
        w if w.is_multiple_of(4) => Width::W16,
        w if w.is_multiple_of(2) => Width::W8,
        _ => Width::W4,
    }
}

/// The type the kernels load at each width.
fn vector_type(width: Width) -> &'static str {
    match width {
        Width::W8 => "uint2",
        Width::W16 => "uint4",
        _ => "unsigned",
    }
}

/// `e`, `4*e`, `4*e + 1`: an index in the element `e`.
fn index(scale: u32, offset: u32) -> String {
    let element = if scale == 1 { "e".to_owned() } else { format!("{scale}*e") };
    if offset == 0 { element } else { format!("{element} + {offset}") }
}

/// How a thread reads its element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// An array of structs of `fields` words, each field its own 4-byte load.
    AosFields { fields: u32 },
    /// A struct of arrays, one array of [`THREADS`] words per field, each field its own 4-byte load.
    SoaFields { fields: u32 },
    /// An array of structs of `fields` words padded to `words`, each element read whole, padding
    /// included, with the widest loads that divide it.
    AosWhole { fields: u32, words: u32 },
}

impl Read {
    /// Fields of data per element.
    pub fn fields(self) -> u32 {
        match self {
            Read::AosFields { fields } | Read::SoaFields { fields } | Read::AosWhole { fields, .. } => fields,
        }
    }

    /// Words an element takes in shared memory, padding included.
    pub fn words(self) -> u32 {
        match self {
            Read::AosWhole { words, .. } => words,
            _ => self.fields(),
        }
    }

    pub fn width(self) -> Width {
        match self {
            Read::AosWhole { words, .. } => widest_load(words),
            _ => Width::W4,
        }
    }

    /// Loads per element.
    pub fn loads(self) -> u32 {
        self.words() * 4 / self.width().bytes()
    }

    /// The byte that load `load` of element `element` reads.
    pub fn byte(self, element: u32, load: u32) -> u32 {
        match self {
            Read::AosFields { fields } => 4 * (element * fields + load),
            Read::SoaFields { .. } => 4 * (load * THREADS + element),
            Read::AosWhole { words, .. } => 4 * element * words + load * self.width().bytes(),
        }
    }

    /// Load `load` of warp `warp`, whose lane `l` reads element `32 * warp + l`.
    pub fn request(self, warp: u32, load: u32) -> Request {
        Request::bytes(Op::Load, self.width(), |lane| self.byte(WARP_SIZE as u32 * warp + lane, load))
            .expect("elements and their parts are aligned to the load")
    }

    /// Wavefronts of one warp reading its 32 elements, every load.
    pub fn wavefronts(self) -> u32 {
        (0..self.loads()).map(|load| self.request(0, load).analyze().wavefronts).sum()
    }

    /// Wavefronts that moving the same bytes would take with no conflict.
    pub fn ideal(self) -> u32 {
        (0..self.loads()).map(|load| self.request(0, load).ideal_wavefronts()).sum()
    }

    /// How the kernel writes load `load`, e.g. `tile[4*e + 1]` or `uint4[2*e + 1]`.
    fn access_name(self, load: u32) -> String {
        match self {
            Read::AosFields { fields } => format!("tile[{}]", index(fields, load)),
            Read::SoaFields { .. } if load == 0 => "tile[e]".into(),
            Read::SoaFields { .. } => format!("tile[{load}*{THREADS} + e]"),
            Read::AosWhole { .. } => format!("{}[{}]", vector_type(self.width()), index(self.loads(), load)),
        }
    }

    /// `AoS 3 fields padded to 4, 1 load of 16 B`.
    pub fn label(self) -> String {
        let layout = match self {
            Read::SoaFields { .. } => "SoA",
            _ => "AoS",
        };
        let padding = match self.words() > self.fields() {
            true => format!(" padded to {}", self.words()),
            false => String::new(),
        };
        let loads = self.loads();
        let plural = if loads == 1 { "" } else { "s" };
        format!("{layout} {} fields{padding}, {loads} load{plural} of {} B", self.fields(), self.width().bytes())
    }

    fn kernel(self) -> &'static str {
        match self {
            Read::AosFields { fields: 3 } => "aos_fields_3",
            Read::AosFields { fields: 4 } => "aos_fields_4",
            Read::AosFields { fields: 8 } => "aos_fields_8",
            Read::SoaFields { fields: 3 } => "soa_fields_3",
            Read::SoaFields { fields: 4 } => "soa_fields_4",
            Read::SoaFields { fields: 8 } => "soa_fields_8",
            Read::AosWhole { words: 4, .. } => "aos_vector_4",
            Read::AosWhole { words: 8, .. } => "aos_vector_8",
            _ => unreachable!("no kernel reads {self:?}"),
        }
    }
}

pub struct StructLayout;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: StructLayout = StructLayout;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub read: Read,
    pub launch: Launch,
}

impl Spec {
    /// The table of the GPU summary that shows the run.
    fn family(&self) -> &'static str {
        match self.read.fields() {
            3 => "3 fields (12 bytes), like float3",
            4 => "4 fields (16 bytes): a particle",
            _ => "8 fields (32 bytes)",
        }
    }

    /// Fields of data the threads read in one launch.
    fn fields_read(&self) -> f64 {
        let Launch { blocks, threads, iterations } = self.launch;
        blocks as f64 * threads as f64 * iterations as f64 * self.read.fields() as f64
    }
}

/// The model's wavefronts of the two runs a figure divides, as a ratio.
fn wavefront_ratio(ratio: &TimeRatio) -> Option<f64> {
    let wavefronts = |label| RUN_READS.iter().find(|read| read.label() == label).map(|read| read.wavefronts());
    Some(wavefronts(ratio.numerator)? as f64 / wavefronts(ratio.denominator)? as f64)
}

impl WordsRun for Spec {
    fn label(&self) -> String {
        self.read.label()
    }

    fn kernel(&self) -> &'static str {
        self.read.kernel()
    }

    fn arguments(&self) -> WordsLaunch {
        self.launch.with_first_argument(0)
    }

    /// The tile the block fills: one element per thread, padding words 0.
    fn input(&self) -> Vec<u32> {
        let (fields, words) = (self.read.fields(), self.read.words());
        let mut input = random_words((THREADS * words) as usize);
        for (index, word) in input.iter_mut().enumerate() {
            if index as u32 % words >= fields {
                *word = 0;
            }
        }
        input
    }

    /// The CPU reference: what thread `thread` writes, given the tile's words.
    fn expected(&self, words: &[u32], thread: usize) -> u32 {
        let element = thread as u32 % THREADS;
        let values =
            (0..self.read.loads()).map(|load| loaded_value(words, self.read.width(), self.read.byte(element, load)));
        repeated_sum(values, self.launch.iterations)
    }

    /// Every shared-memory instruction of a run. Warp `w` reads what warp 0 reads moved by `32 w`
    /// elements, whole turns of the banks, so warp 0's request stands for all of them.
    fn accesses(&self) -> Vec<DeclaredAccess> {
        let executions = self.launch.warps() * self.launch.iterations as u64;
        let mut accesses: Vec<DeclaredAccess> = (0..self.read.loads())
            .map(|load| DeclaredAccess {
                name: self.read.access_name(load),
                request: self.read.request(0, load),
                executions,
            })
            .collect();
        accesses.push(fill_tile_access(self.launch.blocks, THREADS * self.read.words()));
        accesses
    }
}

impl Lesson for StructLayout {
    type Spec = Spec;

    const NUMBER: u32 = 10;
    const TITLE: &'static str = "Arrays of structs, structs of arrays";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn model(&self, report: &mut Report) {
        report.text(
            "Elements of k 4-byte fields, one per lane, as AoS and SoA; chapter 10 of the book explains the counts.",
        );
        report.heading("Reading every field of an element: wavefronts per warp");
        let rows = MODEL_FIELDS
            .map(|k| {
                let [field, aos, soa] = [
                    Read::AosFields { fields: k }.request(0, 0).analyze().wavefronts,
                    Read::AosFields { fields: k }.wavefronts(),
                    Read::SoaFields { fields: k }.wavefronts(),
                ];
                let whole = Read::AosWhole { fields: k, words: k };
                let [loads, wavefronts] = match whole.width() {
                    Width::W4 => ["-".into(), "-".into()],
                    width => [
                        format!("{} x {} B", whole.loads(), width.bytes()).into(),
                        styled(whole.wavefronts(), Tone::of_wavefronts(whole.wavefronts(), k)),
                    ],
                };
                vec![
                    k.into(),
                    (4 * k).into(),
                    styled(field, Tone::of_wavefronts(field, 1)),
                    styled(aos, Tone::of_wavefronts(aos, k)),
                    styled(soa, Tone::of_wavefronts(soa, k)),
                    loads,
                    wavefronts,
                    k.into(),
                ]
            })
            .to_vec();
        report.table(
            [
                "fields k",
                "bytes",
                "AoS: one field",
                "AoS: k field loads",
                "SoA: k field loads",
                "AoS whole: loads",
                "AoS whole: wavefronts",
                "ideal",
            ],
            rows,
        );

        report.heading("A 3-field struct, padded to 16 bytes for one 16-byte load");
        let rows =
            [Read::AosFields { fields: 3 }, Read::SoaFields { fields: 3 }, Read::AosWhole { fields: 3, words: 4 }]
                .map(|read| {
                    let useful = WARP_SIZE as u32 * 4 * read.fields();
                    vec![
                        read.label().into(),
                        (4 * read.words()).into(),
                        read.loads().into(),
                        styled(read.wavefronts(), Tone::of_wavefronts(read.wavefronts(), read.ideal())),
                        (useful / read.wavefronts()).into(),
                    ]
                })
                .to_vec();
        report.table(
            ["read", "bytes per element", "loads per element", "wavefronts per warp", "field bytes per wavefront"],
            rows,
        );

        report.heading("The runs: one element per thread, every load, wavefronts per warp");
        let rows = RUN_READS
            .map(|read| {
                let per_load = read.request(0, 0).analyze();
                vec![
                    read.label().into(),
                    read.kernel().into(),
                    read.loads().into(),
                    styled(per_load.wavefronts, Tone::of_wavefronts(per_load.wavefronts, per_load.ideal)),
                    styled(read.wavefronts(), Tone::of_wavefronts(read.wavefronts(), read.ideal())),
                    (read.wavefronts() - read.ideal()).into(),
                ]
            })
            .to_vec();
        report.table(["run", "kernel", "loads", "wf/req", "wavefronts, all loads", "excess"], rows);
        report.text(format!("Blocks of {THREADS} threads, each thread reading its element in every iteration."));

        let field = Read::AosFields { fields: 4 };
        report.heading(format!("AoS of 4 fields: warp 0 reads field 1, {}", field.access_name(1)));
        let request = field.request(0, 1);
        let analysis = request.analyze();
        add_bank_grid(report, &request, &analysis);
        report.text(format!("{} wavefronts for {} bytes.", analysis.wavefronts, WARP_SIZE as u32 * 4));
        let whole = Read::AosWhole { fields: 4, words: 4 };
        report.heading(format!("AoS of 4 fields read whole: {}", whole.access_name(0)));
        let request = whole.request(0, 0);
        let analysis = request.analyze();
        add_bank_grid(report, &request, &analysis);
        report.text(format!(
            "{} wavefronts for {} bytes, the ideal: each quarter-warp reads {WAVEFRONT_BYTES} contiguous bytes.",
            analysis.wavefronts,
            WARP_SIZE as u32 * whole.width().bytes(),
        ));
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let (blocks, iterations) = match size {
            RunSize::Profile => (2, 8),
            RunSize::Timed => (2 * gpu.multiprocessors, 2048),
        };
        let launch = Launch { blocks, threads: THREADS, iterations };
        words_runs(RUN_READS.map(|read| Spec { read, launch }))
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        prepare_words(gpu, KERNEL_FILE, &run.spec)
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        for (family, members) in grouped(results, Spec::family) {
            let rows = members
                .iter()
                .map(|m| {
                    let [predicted, measured] = counter_cells(m, Op::Load);
                    let fields = m.run.spec.fields_read() / (m.timing.median_ms * 1e-3) / 1e9;
                    vec![
                        m.run.label.as_str().into(),
                        predicted,
                        measured,
                        m.run.spec.read.wavefronts().into(),
                        median_cell(&m.timing),
                        spread_cell(&m.timing),
                        format!("{fields:.0}").into(),
                    ]
                })
                .collect();
            report.heading(family);
            report.table(
                ["kernel", "model wf/req", "ncu wf/req", "model wf, all loads", "median ms", "spread", "Gfields/s"],
                rows,
            );
        }
        report.text(
            "Gfields/s counts the fields of data the threads read in the timed loop, per second (not the padding).",
        );
        for ratio in &FIGURES {
            if let (Some(figure), Some(model)) = (ratio.figure(results), wavefront_ratio(ratio)) {
                report.text(format!(
                    "{}: {:.2}x (the model's wavefronts: {}x).",
                    figure.label,
                    figure.value,
                    format_ratio(model)
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bank_model::gcd;

    use super::*;

    #[test]
    fn an_aos_field_read_costs_gcd_of_fields_and_32_and_a_soa_read_one() {
        for fields in 1..=32 {
            for field in 0..fields {
                let aos = Read::AosFields { fields }.request(0, field).analyze();
                assert_eq!(aos.wavefronts, gcd(fields, 32), "{fields} fields, field {field}");
                assert_eq!(aos.excess, aos.wavefronts - 1);
                assert_eq!(Read::SoaFields { fields }.request(0, field).analyze().wavefronts, 1);
            }
        }
        let costs: Vec<u32> =
            MODEL_FIELDS.map(|k| Read::AosFields { fields: k }.request(0, 0).analyze().wavefronts).to_vec();
        assert_eq!(costs, [1, 2, 1, 4, 1, 2, 1, 8, 4, 16]);
    }

    #[test]
    fn a_whole_read_has_no_excess_unless_the_struct_is_a_multiple_of_8_words() {
        for words in (2..=32).filter(|w| widest_load(*w) != Width::W4) {
            let whole = Read::AosWhole { fields: words, words };
            for load in 0..whole.loads() {
                let analysis = whole.request(0, load).analyze();
                assert_eq!(analysis.excess == 0, !words.is_multiple_of(8), "{words} words, load {load}");
            }
            assert_eq!(whole.ideal(), words, "a whole read moves the element's bytes, 128 per wavefront");
        }
        // One 16-byte load of a 4-field particle: 4 wavefronts, all of them its bytes.
        let particle = Read::AosWhole { fields: 4, words: 4 }.request(0, 0).analyze();
        assert_eq!((particle.wavefronts, particle.ideal, particle.excess), (4, 4, 0));
        assert_eq!(Read::AosWhole { fields: 4, words: 4 }.wavefronts(), Read::SoaFields { fields: 4 }.wavefronts());
        // Two 16-byte loads of an 8-field struct: 8 wavefronts each, twice the ideal.
        assert_eq!(Read::AosWhole { fields: 8, words: 8 }.wavefronts(), 16);
    }

    #[test]
    fn padding_3_fields_to_16_bytes_costs_a_third_more_wavefronts_in_one_load() {
        let [fields, padded] = [Read::AosFields { fields: 3 }, Read::AosWhole { fields: 3, words: 4 }];
        assert_eq!((fields.loads(), fields.wavefronts()), (3, 3));
        assert_eq!((padded.loads(), padded.wavefronts(), padded.ideal()), (1, 4, 4));
        assert_eq!(padded.label(), "AoS 3 fields padded to 4, 1 load of 16 B");
    }

    #[test]
    fn every_warp_costs_what_warp_0_costs() {
        for read in RUN_READS {
            for load in 0..read.loads() {
                let first = read.request(0, load).analyze().wavefronts;
                for warp in 1..THREADS / WARP_SIZE as u32 {
                    assert_eq!(read.request(warp, load).analyze().wavefronts, first, "{}, warp {warp}", read.label());
                }
            }
        }
    }

    #[test]
    fn declared_counts_follow_the_launch_shape() {
        let runs = StructLayout.runs(&GpuInfo::h100(), RunSize::Profile);
        let find = |label: &str| runs.iter().find(|r| r.label == label).unwrap_or_else(|| panic!("no run {label}"));
        // 2 blocks x 32 warps x 8 iterations x 4 field loads at 4 wavefronts; a fill of 4096 words.
        let aos = find("AoS 4 fields, 4 loads of 4 B");
        assert_eq!(aos.predicted(Op::Load), (2 * 32 * 8 * 4 * 4, 2 * 32 * 8 * 4));
        assert_eq!(aos.predicted(Op::Store), (2 * 128, 2 * 128));
        assert_eq!(find("SoA 4 fields, 4 loads of 4 B").predicted(Op::Load), (2 * 32 * 8 * 4, 2 * 32 * 8 * 4));
        // One 16-byte load per iteration at 4 wavefronts, no excess.
        let vector = find("AoS 4 fields, 1 load of 16 B");
        assert_eq!(vector.predicted(Op::Load), (2 * 32 * 8 * 4, 2 * 32 * 8));
        assert_eq!(vector.predicted_excess(), 0);
        // Padded: the fill copies the padding words too.
        let padded = find("AoS 3 fields padded to 4, 1 load of 16 B");
        assert_eq!(padded.predicted(Op::Store), (2 * 128, 2 * 128));
        assert_eq!(find("AoS 3 fields, 3 loads of 4 B").predicted(Op::Store), (2 * 96, 2 * 96));
        // Two 16-byte loads at 8 wavefronts each; a fill of 8192 words.
        let wide = find("AoS 8 fields, 2 loads of 16 B");
        assert_eq!(wide.predicted(Op::Load), (2 * 32 * 8 * 2 * 8, 2 * 32 * 8 * 2));
        assert_eq!(wide.predicted(Op::Store), (2 * 256, 2 * 256));
        assert_eq!(wide.predicted_excess(), 2 * 32 * 8 * 2 * 4);
    }

    #[test]
    fn references_read_what_the_kernels_read() {
        let launch = Launch { blocks: 2, threads: THREADS, iterations: 3 };
        let counting: Vec<u32> = (0..THREADS * 8).collect();
        let expected = |read, thread| Spec { read, launch }.expected(&counting, thread);
        // Word i holds i. Thread 5 (and thread 1029, of the second block) reads element 5.
        assert_eq!(expected(Read::AosFields { fields: 4 }, 5), 3 * (20 + 21 + 22 + 23));
        assert_eq!(expected(Read::AosFields { fields: 4 }, 1029), 3 * (20 + 21 + 22 + 23));
        assert_eq!(expected(Read::AosWhole { fields: 4, words: 4 }, 5), 3 * (20 + 21 + 22 + 23));
        assert_eq!(expected(Read::SoaFields { fields: 4 }, 5), 3 * (5 + 1029 + 2053 + 3077));
        assert_eq!(expected(Read::AosFields { fields: 3 }, 5), 3 * (15 + 16 + 17));
        assert_eq!(expected(Read::AosWhole { fields: 8, words: 8 }, 5), 3 * (40..48).sum::<u32>());
        // The padded tile holds 0 in every fourth word, so its one load adds up the three fields.
        let padded = Spec { read: Read::AosWhole { fields: 3, words: 4 }, launch };
        let input = padded.input();
        assert_eq!(input.len(), 4 * THREADS as usize);
        assert!(input.iter().skip(3).step_by(4).all(|&word| word == 0));
        assert_eq!(padded.expected(&input, 5), repeated_sum(input[20..23].iter().copied(), 3));
    }
}
