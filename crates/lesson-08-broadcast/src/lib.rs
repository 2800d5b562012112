//! Lesson 8: broadcast and shuffle.
//!
//! A bank delivers a word to every lane that asks for it in the same wavefront, so lanes that
//! share words cost nothing extra: only the distinct words in one bank count. All lanes on one
//! word is a broadcast (1 wavefront), a few words a multicast; a lookup into a small table is a
//! multicast whose cost depends on how its entries meet in banks. Wide accesses of one address
//! differ by op: a 16-byte load of one address takes 2 wavefronts, a 16-byte store 4. The warp
//! shuffle is the other way to hand one lane's value to others; the lesson compares it with a
//! shared broadcast in a throughput-bound loop and in a latency-bound chain.

use bank_model::{Op, Request, WARP_SIZE, Width, describe::summary};
use cuda_kernels::{Gpu, GpuError, GpuInfo};
use lesson_kit::{
    DeclaredAccess, KernelRun, Lesson, Prepared, Report, RunSize, Styled, TimeRatio, TimedRun, Tone,
    bank_table::add_bank_grid,
    cells::{counter_cells, format_ratio, grouped, median_cell},
    styled,
    words_kernel::{
        Launch, WordsLaunch, WordsRun, fill_tile_access, loaded_value, prepare_words, random_words, repeated_sum,
        words_runs,
    },
};

/// The kernels' source file in `kernels/`.
pub const KERNEL_FILE: &str = "broadcast.cu";
/// Independent loads per thread per iteration, as `ROWS` in the kernels.
pub const ROWS: u32 = 8;
/// Words the multicast kernels fill, as `MULTICAST_WORDS` in the kernels.
const MULTICAST_WORDS: u32 = 1024;
/// Words of the vector every lane needs, and of the table the chains follow (`VALUES`).
pub const VALUES: u32 = 32;
/// Distinct words per request that the model's multicast table covers.
const MODEL_DISTINCT: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// Distinct words per request in the multicast runs (1 is the broadcast, run once).
pub const RUN_DISTINCT: [u32; 4] = [2, 4, 8, 32];
/// Widths of the one-address runs.
pub const ONE_ADDRESS_WIDTHS: [Width; 3] = [Width::W4, Width::W8, Width::W16];
/// Table sizes of the shared-memory lookup runs (`MAX_ENTRIES` in the kernels is the last).
pub const LOOKUP_ENTRIES: [u32; 3] = [32, 256, 1024];
/// Table sizes in the model's lookup table.
const MODEL_ENTRIES: [u32; 6] = [32, 64, 128, 256, 1024, 4096];
/// Random lookup requests the model averages over for each table size.
const MODEL_SAMPLES: u32 = 4096;
/// Threads per block of the throughput kernels.
const THREADS: u32 = 1024;
/// The headline figures: each divides the times of two runs.
const FIGURES: [TimeRatio; 5] = [
    TimeRatio {
        key: "multicast_4_words_one_bank_vs_4_banks",
        label: "4 words in one bank, time over 4 words in 4 banks",
        numerator: "4 words in one bank",
        denominator: "4 words in 4 banks",
    },
    TimeRatio {
        key: "one_address_store16_vs_load16",
        label: "16 bytes of one address, stores' time over loads'",
        numerator: "st 16-byte, one address",
        denominator: "ld 16-byte, one address",
    },
    TimeRatio {
        key: "vector_lane_per_value_vs_broadcast",
        label: "a vector to every lane: one lane per value and shuffles, time over shared broadcasts",
        numerator: "vector: one lane per value, shuffle",
        denominator: "vector: shared broadcast",
    },
    TimeRatio {
        key: "chain_shuffle_vs_broadcast",
        label: "one warp's chain: a shuffle step's time over a shared broadcast step's",
        numerator: "chain: one lane per value, shuffle",
        denominator: "chain: shared broadcast",
    },
    TimeRatio {
        key: "lookup_1024_vs_32",
        label: "random lookups, 1024-entry table time over 32-entry",
        numerator: "lookup: 1024 entries in shared memory",
        denominator: "lookup: 32 entries in shared memory",
    },
];

/// The word lane `lane` reads in row `row` of a multicast: `(lane mod distinct) * step + row`,
/// `step` 32 (one bank) or 1 (many).
pub fn multicast_word(distinct: u32, one_bank: bool, lane: u32, row: u32) -> u32 {
    let step = if one_bank { 32 } else { 1 };
    lane % distinct * step + row
}

/// Row `row` of a multicast as a warp request.
pub fn multicast_request(distinct: u32, one_bank: bool, row: u32) -> Request {
    Request::elements(Op::Load, Width::W4, |lane| multicast_word(distinct, one_bank, lane, row))
}

/// Every lane accesses element `element` of `width` bytes.
pub fn one_address_request(op: Op, width: Width, element: u32) -> Request {
    Request::new(op, width, [Some(element * width.bytes()); WARP_SIZE]).expect("element addresses are aligned")
}

/// Only lane 0 loads word `word`.
fn lane_zero_request(word: u32) -> Request {
    let mut lanes = [None; WARP_SIZE];
    lanes[0] = Some(4 * word);
    Request::new(Op::Load, Width::W4, lanes).expect("aligned")
}

/// Lane `lane` loads word `first + lane`.
fn consecutive_words(first: u32) -> Request {
    Request::elements(Op::Load, Width::W4, |lane| first + lane)
}

/// The entry lane `lane` looks up in lookup request `request` of a table of `entries` words (a
/// power of two): a fixed pseudo-random index, the same on every run (the run's rows are requests
/// 0 to 7; the model's averages take more).
pub fn lookup_index(request: u32, lane: u32, entries: u32) -> u32 {
    // A 32-bit integer hash (two multiply-xorshift rounds) of the request's lane number.
    let mut x = request * WARP_SIZE as u32 + lane + 1;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x & (entries - 1)
}

/// Lookup request `request` into a table of `entries` words.
pub fn lookup_request(request: u32, entries: u32) -> Request {
    Request::elements(Op::Load, Width::W4, |lane| lookup_index(request, lane, entries))
}

/// Mean and most wavefronts of the first `samples` lookup requests into a table of `entries` words.
pub fn lookup_cost(entries: u32, samples: u32) -> (f64, u32) {
    let costs: Vec<u32> = (0..samples).map(|request| lookup_request(request, entries).wavefronts()).collect();
    (costs.iter().sum::<u32>() as f64 / samples as f64, costs.into_iter().max().unwrap_or(0))
}

/// How a warp hands out words that its lanes all need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Every lane loads the word: a shared broadcast.
    Broadcast,
    /// Lane 0 loads it and `__shfl_sync` hands it to the others.
    OneLane,
    /// Lane `l` holds word `l` in a register and `__shfl_sync` hands it out.
    LanePerValue,
}

impl Way {
    pub const ALL: [Way; 3] = [Way::Broadcast, Way::OneLane, Way::LanePerValue];

    fn name(self) -> &'static str {
        match self {
            Way::Broadcast => "shared broadcast",
            Way::OneLane => "lane 0 loads, shuffle",
            Way::LanePerValue => "one lane per value, shuffle",
        }
    }

    fn spread_kernel(self) -> &'static str {
        match self {
            Way::Broadcast => "spread_broadcast",
            Way::OneLane => "spread_one_lane",
            Way::LanePerValue => "spread_lane_per_value",
        }
    }

    fn chain_kernel(self) -> &'static str {
        match self {
            Way::Broadcast => "chain_broadcast",
            Way::OneLane => "chain_one_lane",
            Way::LanePerValue => "chain_lane_per_value",
        }
    }

    /// Shuffles a warp makes to hand out the `VALUES` words once.
    pub fn shuffles_per_vector(self) -> u32 {
        match self {
            Way::Broadcast => 0,
            Way::OneLane | Way::LanePerValue => VALUES,
        }
    }

    /// The shared loads of `spread_*` in a launch: the vector's fill, then per warp and iteration
    /// the loads that hand out `VALUES` words. Every `vector[k]` load costs what `vector[0]` costs.
    fn spread_accesses(self, launch: Launch) -> Vec<DeclaredAccess> {
        let per_warp_loop = launch.warps() * launch.iterations as u64;
        let loads = match self {
            Way::Broadcast => DeclaredAccess {
                name: format!("vector[k], every lane, k = 0-{}", VALUES - 1),
                request: one_address_request(Op::Load, Width::W4, 0),
                executions: per_warp_loop * VALUES as u64,
            },
            Way::OneLane => DeclaredAccess {
                name: format!("vector[k], lane 0 only, k = 0-{}", VALUES - 1),
                request: lane_zero_request(0),
                executions: per_warp_loop * VALUES as u64,
            },
            Way::LanePerValue => DeclaredAccess {
                name: "mine = vector[lane]".into(),
                request: consecutive_words(0),
                executions: per_warp_loop,
            },
        };
        vec![fill_tile_access(launch.blocks, VALUES), loads]
    }

    /// The shared loads of `chain_*`, one warp, `steps` steps. The index is one for the whole
    /// warp, whatever the table holds, and any one index costs what index 0 costs.
    fn chain_accesses(self, steps: u32) -> Vec<DeclaredAccess> {
        let loads = match self {
            Way::Broadcast => DeclaredAccess {
                name: "index = table[index], every lane".into(),
                request: one_address_request(Op::Load, Width::W4, 0),
                executions: steps as u64,
            },
            Way::OneLane => DeclaredAccess {
                name: "value = table[index], lane 0 only".into(),
                request: lane_zero_request(0),
                executions: steps as u64,
            },
            Way::LanePerValue => {
                DeclaredAccess { name: "entry = table[lane]".into(), request: consecutive_words(0), executions: 1 }
            }
        };
        vec![fill_tile_access(1, VALUES), loads]
    }
}

pub struct Broadcast;

/// The lesson, as the course's list of lessons names it.
pub static LESSON: Broadcast = Broadcast;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    /// `multicast_one_bank` / `multicast_many_banks`: 32 lanes on `distinct` words.
    Multicast { distinct: u32, one_bank: bool, launch: Launch },
    /// `one_address_{load,store}_N`: every lane on one element.
    OneAddress { op: Op, width: Width, launch: Launch },
    /// `spread_*`: every lane needs every word of a vector, many warps.
    Spread { way: Way, launch: Launch },
    /// `chain_*`: one warp, each step's index from the previous step.
    Chain { way: Way, steps: u32 },
    /// `lookup_shared` (a table of `entries` words) or `lookup_shuffle` (32 entries in registers).
    Lookup { entries: u32, shuffle: bool, launch: Launch },
}

impl Spec {
    /// The launch, and the kernel's first `unsigned` argument.
    fn launch(&self) -> (Launch, u32) {
        match *self {
            Spec::Multicast { distinct, launch, .. } => (launch, distinct),
            Spec::Lookup { entries, launch, .. } => (launch, entries),
            Spec::OneAddress { launch, .. } | Spec::Spread { launch, .. } => (launch, 0),
            Spec::Chain { steps, .. } => (Launch { blocks: 1, threads: 32, iterations: steps }, 0),
        }
    }

    /// Entries of the lookup table: `entries` in shared memory, 32 for the shuffle's registers.
    fn table_entries(&self) -> u32 {
        match *self {
            Spec::Lookup { shuffle: true, .. } => WARP_SIZE as u32,
            Spec::Lookup { entries, .. } => entries,
            _ => 0,
        }
    }

    /// The table of the GPU summary that shows the run.
    fn family(&self) -> &'static str {
        match self {
            Spec::Multicast { .. } => "Multicast: many warps, 8 independent loads per thread",
            Spec::OneAddress { .. } => "One address, every lane: many warps, 8 accesses per thread",
            Spec::Spread { .. } => "A vector of 32 words to every lane: many warps",
            Spec::Chain { .. } => "One warp's dependent chain",
            Spec::Lookup { .. } => "Random lookups: many warps, 8 per thread",
        }
    }

    /// The op of the timed loop's shared accesses.
    fn op(&self) -> Op {
        match *self {
            Spec::OneAddress { op, .. } => op,
            _ => Op::Load,
        }
    }
}

impl WordsRun for Spec {
    fn kernel(&self) -> &'static str {
        match *self {
            Spec::Multicast { one_bank: true, .. } => "multicast_one_bank",
            Spec::Multicast { one_bank: false, .. } => "multicast_many_banks",
            Spec::OneAddress { op, width, .. } => match (op, width.bytes()) {
                (Op::Load, 4) => "one_address_load_4",
                (Op::Load, 8) => "one_address_load_8",
                (Op::Load, 16) => "one_address_load_16",
                (Op::Store, 4) => "one_address_store_4",
                (Op::Store, 8) => "one_address_store_8",
                (Op::Store, 16) => "one_address_store_16",
                _ => unreachable!("no one-address kernel for {self:?}"),
            },
            Spec::Spread { way, .. } => way.spread_kernel(),
            Spec::Chain { way, .. } => way.chain_kernel(),
            Spec::Lookup { shuffle: false, .. } => "lookup_shared",
            Spec::Lookup { shuffle: true, .. } => "lookup_shuffle",
        }
    }

    /// The kernel's input words: what it fills its tile with. The lookups' table is followed by
    /// their fixed indices; the store kernels read no input (a word is uploaded all the same).
    fn input(&self) -> Vec<u32> {
        match *self {
            Spec::Multicast { .. } => random_words(MULTICAST_WORDS as usize),
            Spec::OneAddress { op: Op::Load, width, .. } => random_words((ROWS * width.bytes() / 4) as usize),
            Spec::OneAddress { .. } => vec![0],
            Spec::Spread { .. } | Spec::Chain { .. } => random_words(VALUES as usize),
            Spec::Lookup { .. } => {
                let table = self.table_entries();
                let mut words = random_words(table as usize);
                words.extend(
                    (0..ROWS).flat_map(|row| (0..WARP_SIZE as u32).map(move |lane| lookup_index(row, lane, table))),
                );
                words
            }
        }
    }

    /// The CPU reference: what lane `lane` writes, given the input words.
    fn expected(&self, words: &[u32], thread: usize) -> u32 {
        let lane = (thread % WARP_SIZE) as u32;
        let (launch, _) = self.launch();
        let iterations = launch.iterations;
        match *self {
            Spec::Multicast { distinct, one_bank, .. } => repeated_sum(
                (0..ROWS).map(|row| words[multicast_word(distinct, one_bank, lane, row) as usize]),
                iterations,
            ),
            Spec::OneAddress { op: Op::Load, width, .. } => {
                repeated_sum((0..ROWS).map(|row| loaded_value(words, width, row * width.bytes())), iterations)
            }
            // Every part of element 0 holds 1.
            Spec::OneAddress { width, .. } => width.bytes() / 4,
            Spec::Spread { .. } => repeated_sum(words.iter().copied(), iterations),
            Spec::Chain { steps, .. } => (0..steps).fold(0, |index, _| words[index as usize] % VALUES),
            Spec::Lookup { .. } => {
                let table = self.table_entries();
                repeated_sum((0..ROWS).map(|row| words[lookup_index(row, lane, table) as usize]), iterations)
            }
        }
    }

    fn label(&self) -> String {
        match *self {
            Spec::Multicast { distinct: 1, .. } => "broadcast: every lane on word r".into(),
            Spec::Multicast { distinct, one_bank, .. } => {
                format!(
                    "{distinct} words in {}",
                    if one_bank { "one bank".to_owned() } else { format!("{distinct} banks") }
                )
            }
            Spec::OneAddress { op, width, .. } => format!("{op} {}-byte, one address", width.bytes()),
            Spec::Spread { way, .. } => format!("vector: {}", way.name()),
            Spec::Chain { way, .. } => format!("chain: {}", way.name()),
            Spec::Lookup { entries, shuffle: false, .. } => format!("lookup: {entries} entries in shared memory"),
            Spec::Lookup { shuffle: true, .. } => "lookup: 32 entries in registers, shuffle".into(),
        }
    }

    /// Every shared-memory instruction of the run, as its kernel executes them.
    fn accesses(&self) -> Vec<DeclaredAccess> {
        let (launch, _) = self.launch();
        let per_warp_loop = launch.warps() * launch.iterations as u64;
        match *self {
            Spec::Multicast { distinct, one_bank, .. } => {
                let mut accesses: Vec<DeclaredAccess> = (0..ROWS)
                    .map(|row| DeclaredAccess {
                        name: format!("tile[lane % {distinct} * {} + {row}]", if one_bank { 32 } else { 1 }),
                        request: multicast_request(distinct, one_bank, row),
                        executions: per_warp_loop,
                    })
                    .collect();
                accesses.push(fill_tile_access(launch.blocks, MULTICAST_WORDS));
                accesses
            }
            Spec::OneAddress { op, width, .. } => {
                let mut accesses: Vec<DeclaredAccess> = (0..ROWS)
                    .map(|row| DeclaredAccess {
                        name: format!("{}-byte element {row}, every lane", width.bytes()),
                        request: one_address_request(op, width, row),
                        executions: per_warp_loop,
                    })
                    .collect();
                accesses.push(match op {
                    Op::Load => fill_tile_access(launch.blocks, ROWS * width.bytes() / 4),
                    // Each thread reads back element 0 once.
                    _ => DeclaredAccess {
                        name: format!("out = {}-byte element 0, every lane", width.bytes()),
                        request: one_address_request(Op::Load, width, 0),
                        executions: launch.warps(),
                    },
                });
                accesses
            }
            Spec::Spread { way, launch } => way.spread_accesses(launch),
            Spec::Chain { way, steps } => way.chain_accesses(steps),
            Spec::Lookup { entries, shuffle, .. } => {
                let table = self.table_entries();
                let mut accesses = vec![fill_tile_access(launch.blocks, table + WARP_SIZE as u32 * ROWS)];
                accesses.extend((0..ROWS).map(|row| DeclaredAccess {
                    name: format!("index[{row}] = tile[{table} + lane + 32 * {row}]"),
                    request: consecutive_words(table + WARP_SIZE as u32 * row),
                    executions: launch.warps(),
                }));
                match shuffle {
                    true => accesses.push(DeclaredAccess {
                        name: "entry = tile[lane]".into(),
                        request: consecutive_words(0),
                        executions: launch.warps(),
                    }),
                    false => accesses.extend((0..ROWS).map(|row| DeclaredAccess {
                        name: format!("tile[index[{row}]]"),
                        request: lookup_request(row, entries),
                        executions: per_warp_loop,
                    })),
                }
                accesses
            }
        }
    }

    fn arguments(&self) -> WordsLaunch {
        let (launch, first) = self.launch();
        launch.with_first_argument(first)
    }
}

impl Lesson for Broadcast {
    type Spec = Spec;

    const NUMBER: u32 = 8;
    const TITLE: &'static str = "Broadcast and shuffle";
    const KERNEL_FILES: &'static [&'static str] = &[KERNEL_FILE];

    fn model(&self, report: &mut Report) {
        report.text(
            "Only distinct words per bank count; chapter 8 of the book explains broadcast, multicast and shuffle.",
        );
        report.heading("Multicast: 32 lanes read d distinct words, lane l reading word l mod d");
        let rows = MODEL_DISTINCT
            .into_iter()
            .map(|distinct| {
                let cost = |one_bank| {
                    let wavefronts = multicast_request(distinct, one_bank, 0).analyze().wavefronts;
                    styled(wavefronts, Tone::of_wavefronts(wavefronts, 1))
                };
                vec![distinct.into(), (WARP_SIZE as u32 / distinct).into(), cost(true), cost(false)]
            })
            .collect();
        report.table(["d", "lanes per word", "words in one bank", "words in d banks"], rows);
        report.text("Four words read by eight lanes each, in one bank and in four banks:");
        for one_bank in [true, false] {
            let request = multicast_request(4, one_bank, 0);
            report.text(format!("tile[lane % 4 * {}]:", if one_bank { 32 } else { 1 }));
            add_bank_grid(report, &request, &request.analyze());
        }

        report.heading("One address, every lane: loads and stores of each width");
        let rows = ONE_ADDRESS_WIDTHS
            .into_iter()
            .map(|width| {
                let [load, store] = [Op::Load, Op::Store].map(|op| one_address_request(op, width, 0).analyze());
                vec![
                    width.bytes().into(),
                    (32 * width.bytes()).into(),
                    styled(load.wavefronts, Tone::of_wavefronts(load.wavefronts, 1)),
                    styled(store.wavefronts, Tone::of_wavefronts(store.wavefronts, 1)),
                    (32 * width.bytes() / load.wavefronts).into(),
                ]
            })
            .collect();
        report.table(["bytes", "bytes to lanes", "ld wavefronts", "st wavefronts", "ld bytes per wavefront"], rows);
        for op in [Op::Load, Op::Store] {
            let request = one_address_request(op, Width::W16, 0);
            report.text(summary(&request, &request.analyze()));
        }
        report
            .text("Loads of one address merge pass groups; stores never do (the book's appendix The rules, measured).");

        report.heading("Random lookups into a table of T words");
        let rows = MODEL_ENTRIES
            .into_iter()
            .map(|entries| {
                let (mean, most) = lookup_cost(entries, MODEL_SAMPLES);
                let (run_mean, _) = lookup_cost(entries, ROWS);
                vec![
                    entries.into(),
                    (entries / 32).max(1).into(),
                    format!("{mean:.2}").into(),
                    most.into(),
                    if LOOKUP_ENTRIES.contains(&entries) { format_ratio(run_mean).into() } else { "-".into() },
                ]
            })
            .collect();
        report.table(
            ["T", "words per bank", format!("mean of {MODEL_SAMPLES} requests").as_str(), "most", "the run's 8 rows"],
            rows,
        );
        report.text("Each lane picks an entry at random; T / 32 words share each bank.");
        let request = lookup_request(0, 1024);
        report.text("Row 0 of the 1024-entry lookup run:");
        add_bank_grid(report, &request, &request.analyze());

        report.heading("Broadcast or shuffle: handing out a vector of 32 words to every lane");
        let rows = Way::ALL
            .into_iter()
            .map(|way| {
                let accesses = way.spread_accesses(Launch { blocks: 1, threads: 32, iterations: 1 });
                let loads = &accesses[1];
                let wavefronts = loads.executions * loads.request.analyze().wavefronts as u64;
                vec![
                    way.name().into(),
                    loads.executions.into(),
                    loads.request.analyze().active_lanes.len().into(),
                    wavefronts.into(),
                    way.shuffles_per_vector().into(),
                ]
            })
            .collect();
        report.table(["way", "shared loads", "lanes per load", "wavefronts", "shuffles"], rows);
        report.text("Per warp, for the 32 words; shuffles use no shared memory, so the clock decides (chapter 8).");
    }

    fn runs(&self, gpu: &GpuInfo, size: RunSize) -> Vec<KernelRun<Spec>> {
        let (blocks, iterations, steps) = match size {
            RunSize::Profile => (2, 4, 64),
            RunSize::Timed => (2 * gpu.multiprocessors, 2048, 16384),
        };
        let launch = Launch { blocks, threads: THREADS, iterations };
        let mut specs = vec![Spec::Multicast { distinct: 1, one_bank: false, launch }];
        for distinct in RUN_DISTINCT {
            for one_bank in [true, false] {
                specs.push(Spec::Multicast { distinct, one_bank, launch });
            }
        }
        for op in [Op::Load, Op::Store] {
            specs.extend(ONE_ADDRESS_WIDTHS.map(|width| Spec::OneAddress { op, width, launch }));
        }
        specs.extend(Way::ALL.map(|way| Spec::Spread { way, launch }));
        specs.extend(Way::ALL.map(|way| Spec::Chain { way, steps }));
        specs.extend(LOOKUP_ENTRIES.map(|entries| Spec::Lookup { entries, shuffle: false, launch }));
        specs.push(Spec::Lookup { entries: WARP_SIZE as u32, shuffle: true, launch });
        words_runs(specs)
    }

    fn prepare<'g>(&self, gpu: &'g Gpu, run: &KernelRun<Spec>) -> Result<Box<dyn Prepared + 'g>, GpuError> {
        prepare_words(gpu, KERNEL_FILE, &run.spec)
    }

    fn time_ratios(&self) -> &'static [TimeRatio] {
        &FIGURES
    }

    fn summarize(&self, _gpu: &GpuInfo, results: &[TimedRun<Spec>], report: &mut Report) {
        // One table per family of runs, each timed against its first row.
        for (family, members) in grouped(results, Spec::family) {
            let first = members[0];
            let chain = matches!(first.run.spec, Spec::Chain { .. });
            let rows = members
                .iter()
                .map(|m| {
                    let [predicted, measured] = counter_cells(m, m.run.spec.op());
                    let time: Styled = match m.run.spec {
                        Spec::Chain { steps, .. } => format!("{:.1}", m.timing.median_ms * 1e6 / steps as f64).into(),
                        _ => median_cell(&m.timing),
                    };
                    vec![
                        m.run.label.as_str().into(),
                        predicted,
                        measured,
                        time,
                        format!("{:.0}%", 100.0 * m.timing.spread()).into(),
                        format!("{:.2}x", m.timing.median_ms / first.timing.median_ms).into(),
                    ]
                })
                .collect();
            report.heading(family);
            let time = if chain { "ns per step" } else { "median ms" };
            report.table(["kernel", "model wf/req", "ncu wf/req", time, "spread", "time vs first row"], rows);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_distinct_words_in_one_bank_cost() {
        let cost = |distinct, one_bank| multicast_request(distinct, one_bank, 0).analyze().wavefronts;
        for distinct in MODEL_DISTINCT {
            assert_eq!(cost(distinct, true), distinct);
            assert_eq!(cost(distinct, false), 1);
        }
        for distinct in RUN_DISTINCT {
            for one_bank in [true, false] {
                for row in 1..ROWS {
                    assert_eq!(
                        multicast_request(distinct, one_bank, row).analyze().wavefronts,
                        cost(distinct, one_bank)
                    );
                }
            }
        }
    }

    #[test]
    fn one_address_loads_broadcast_and_stores_do_not() {
        let costs: Vec<[u32; 2]> = ONE_ADDRESS_WIDTHS
            .into_iter()
            .map(|width| [Op::Load, Op::Store].map(|op| one_address_request(op, width, 0).analyze().wavefronts))
            .collect();
        assert_eq!(costs, [[1, 1], [1, 2], [2, 4]]);
        for width in ONE_ADDRESS_WIDTHS {
            for op in [Op::Load, Op::Store] {
                let first = one_address_request(op, width, 0).analyze().wavefronts;
                assert!((1..ROWS).all(|row| one_address_request(op, width, row).analyze().wavefronts == first));
            }
        }
    }

    #[test]
    fn any_index_shared_by_the_warp_or_read_by_lane_zero_costs_one_wavefront() {
        for word in 0..VALUES {
            assert_eq!(one_address_request(Op::Load, Width::W4, word).analyze().wavefronts, 1);
            assert_eq!(lane_zero_request(word).analyze().wavefronts, 1);
        }
    }

    #[test]
    fn lookups_in_a_table_of_32_words_never_conflict_and_larger_tables_do() {
        assert_eq!(lookup_cost(32, MODEL_SAMPLES), (1.0, 1));
        let means: Vec<f64> = MODEL_ENTRIES.into_iter().map(|entries| lookup_cost(entries, MODEL_SAMPLES).0).collect();
        assert!(means.windows(2).all(|pair| pair[0] <= pair[1]), "fuller banks cost more: {means:?}");
        assert!(means[1] > 1.5, "64 entries: most requests pick both words of some bank: {means:?}");
        assert!((0..ROWS).all(|row| (0..32).all(|lane| lookup_index(row, lane, 256) < 256)));
    }

    #[test]
    fn the_ways_to_hand_out_a_vector_load_what_the_chapter_says() {
        let per_warp = |way: Way| {
            let accesses = way.spread_accesses(Launch { blocks: 1, threads: 32, iterations: 1 });
            let loads = &accesses[1];
            (loads.executions, loads.executions * loads.request.analyze().wavefronts as u64)
        };
        assert_eq!(per_warp(Way::Broadcast), (32, 32));
        assert_eq!(per_warp(Way::OneLane), (32, 32));
        assert_eq!(per_warp(Way::LanePerValue), (1, 1));
    }

    #[test]
    fn declared_counts_follow_the_launch_shape() {
        let runs = Broadcast.runs(&GpuInfo::h100(), RunSize::Profile);
        let find = |label: &str| runs.iter().find(|r| r.label == label).unwrap_or_else(|| panic!("no run {label}"));
        // 2 blocks x 32 warps x 4 iterations x 8 rows, 8 wavefronts each; the fill: 1024 words.
        let multicast = find("8 words in one bank");
        assert_eq!(multicast.predicted(Op::Load), (2 * 32 * 4 * 8 * 8, 2 * 32 * 4 * 8));
        assert_eq!(multicast.predicted(Op::Store), (2 * 32, 2 * 32));
        // 8 stores of 4 wavefronts per warp and iteration, then one read-back load of 2 per warp.
        let store = find("st 16-byte, one address");
        assert_eq!(store.predicted(Op::Store), (2 * 32 * 4 * 8 * 4, 2 * 32 * 4 * 8));
        assert_eq!(store.predicted(Op::Load), (2 * 32 * 2, 2 * 32));
        // Lane 0 loads each of 32 values once per iteration; the fill is one warp's store per block.
        let one_lane = find("vector: lane 0 loads, shuffle");
        assert_eq!(one_lane.predicted(Op::Load), (2 * 32 * 4 * 32, 2 * 32 * 4 * 32));
        assert_eq!(one_lane.predicted(Op::Store), (2, 2));
        let chain = find("chain: one lane per value, shuffle");
        assert_eq!(chain.predicted(Op::Load), (1, 1), "the table is loaded once; the chain is all shuffles");
        // The 256 indices are loaded once per warp, then 8 lookups per iteration.
        let lookup = find("lookup: 256 entries in shared memory");
        let lookups: u64 = (0..ROWS).map(|row| lookup_request(row, 256).analyze().wavefronts as u64).sum();
        assert_eq!(lookup.predicted(Op::Load), (2 * 32 * (8 + 4 * lookups), 2 * 32 * (8 + 4 * 8)));
        assert_eq!(lookup.predicted(Op::Store), (2 * 16, 2 * 16));
    }

    #[test]
    fn references_read_what_the_kernels_read() {
        let launch = Launch { blocks: 1, threads: 1024, iterations: 3 };
        let counting: Vec<u32> = (0..MULTICAST_WORDS).collect();
        // Word i holds i: lane 6 of the 4-word one-bank multicast reads words 64 + r.
        let multicast = Spec::Multicast { distinct: 4, one_bank: true, launch };
        assert_eq!(multicast.expected(&counting, 6), 3 * (0..8).map(|r| 64 + r).sum::<u32>());
        // Every part of a 16-byte element 0 holds 1.
        let store = Spec::OneAddress { op: Op::Store, width: Width::W16, launch };
        assert_eq!(store.expected(&[], 6), 4);
        // table[i] = i + 1: a chain from 0 is at step s after s steps, modulo 32.
        let next: Vec<u32> = (1..=VALUES).collect();
        for way in Way::ALL {
            assert_eq!(Spec::Chain { way, steps: 70 }.expected(&next, 0), 70 % 32);
        }
        // The lookups' input ends with their indices, which the reference follows.
        let lookup = Spec::Lookup { entries: 256, shuffle: false, launch };
        let words = lookup.input();
        assert_eq!(words.len(), 256 + 32 * 8);
        assert_eq!(words[256 + 32 * 2 + 5], lookup_index(2, 5, 256));
        let picked = (0..8).map(|row| words[lookup_index(row, 5, 256) as usize]);
        assert_eq!(lookup.expected(&words, 5), repeated_sum(picked, 3));
    }
}
