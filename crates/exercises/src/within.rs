//! Every place a learner's part gives an element must lie inside the tile the part declares. The
//! GPU does not stop every place outside it: on the H100, a shared store a few words below a
//! block's first shared variable neither faults nor changes the output (it lands in the block's
//! reserved shared memory), so a padded layout shifted below its tile would pass for an unpadded
//! one, and take its shared-memory points. So a small kernel of the grader's, compiled with the
//! part, writes every place the part's function gives, and the CPU reads them all.

use cuda_kernels::{CudaFunction, Gpu, GpuError, LaunchConfig, PushKernelArg};
use serde::Deserialize;

/// The grader's kernel appended to a submission that has a [`Within`].
pub const KERNEL: &str = "bcm_places_of_the_part";
/// Threads per block of [`KERNEL`].
const THREADS: u32 = 256;

/// The part's function that places elements, and the tile it must keep them in
/// (`[exercise.within]` in `info.toml`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Within {
    /// The function's name: `slot`.
    pub function: String,
    /// How many values each of its arguments takes: `[32, 32]` calls `slot(0, 0)` to `slot(31, 31)`.
    pub arguments: Vec<u32>,
    /// What each argument's values step by (1 if not given): `[1, 8]` calls `tile_offset(row, 0)`,
    /// `tile_offset(row, 8)`, ...
    #[serde(default)]
    pub steps: Vec<u32>,
    /// How many units of the tile an element takes from its place on (1 if not given: a 16-byte
    /// chunk of halves takes 8).
    #[serde(default = "one")]
    pub span: u32,
    /// The tile's size in those units: an expression of the part's names, `TILE_WORDS`.
    pub size: String,
}

const fn one() -> u32 {
    1
}

impl Within {
    /// `Err` naming what is wrong with this entry of exercise `id`.
    pub fn check(&self, id: &str) -> Result<(), String> {
        let problem = if self.arguments.is_empty() || self.arguments.contains(&0) {
            Some("each of its `arguments` takes one value or more".to_owned())
        } else if !self.steps.is_empty() && self.steps.len() != self.arguments.len() {
            Some(format!("give one step per argument ({}), or none", self.arguments.len()))
        } else if self.span == 0 || self.calls() > 1 << 20 {
            Some("`span` must be 1 or more, and the calls at most 2^20".to_owned())
        } else {
            None
        };
        problem.map_or(Ok(()), |problem| Err(format!("exercise {id}: [exercise.within]: {problem}")))
    }

    /// How many calls: every combination of the arguments' values.
    fn calls(&self) -> u64 {
        self.arguments.iter().map(|&n| u64::from(n)).product()
    }

    fn step(&self, argument: usize) -> u32 {
        self.steps.get(argument).copied().unwrap_or(1)
    }

    /// The arguments of call `call` (the last argument varies fastest).
    fn arguments_of(&self, call: u64) -> Vec<u64> {
        let mut rest = call;
        let mut values: Vec<u64> = (0..self.arguments.len())
            .rev()
            .map(|argument| {
                let n = u64::from(self.arguments[argument]);
                let value = rest % n * u64::from(self.step(argument));
                rest /= n;
                value
            })
            .collect();
        values.reverse();
        values
    }

    /// The kernel appended to the part's file: thread `call` writes the place of that call, and
    /// thread 0 the tile's size after them. It names nothing a part could define as a macro but its
    /// own function and size (they are undefined first), and guards with `&&` rather than `if`.
    pub fn kernel(&self) -> String {
        let call = format!("(blockIdx.x * {THREADS}u + threadIdx.x)");
        let mut stride = 1u64;
        let mut arguments: Vec<String> = (0..self.arguments.len())
            .rev()
            .map(|argument| {
                let n = self.arguments[argument];
                let value = format!("({call} / {stride}u % {n}u * {}u)", self.step(argument));
                stride *= u64::from(n);
                value
            })
            .collect();
        arguments.reverse();
        let (calls, function, size) = (self.calls(), &self.function, &self.size);
        format!(
            "\n// The grader's: where the part places each element, for the CPU to check.\n\
             #undef {KERNEL}\n#undef bcm_places\n\
             extern \"C\" __global__ void {KERNEL}(unsigned* bcm_places) {{\n\
             \x20   ({call} < {calls}u) && ((bcm_places[{call}] = (unsigned)({function}({arguments}))), true);\n\
             \x20   ({call} == 0u) && ((bcm_places[{calls}] = (unsigned)({size})), true);\n\
             }}\n",
            arguments = arguments.join(", "),
        )
    }

    /// Runs [`KERNEL`] (`places`, compiled from the part's file and [`Within::kernel`]) and says
    /// which place, if any, lies outside the tile. A place or size it did not write reads as
    /// outside.
    pub fn outside(&self, gpu: &Gpu, places: &CudaFunction) -> Result<Option<String>, GpuError> {
        let calls = self.calls() as usize;
        let mut written = vec![u32::MAX; calls];
        written.push(0);
        let mut buffer = gpu.upload(&written)?;
        let config = LaunchConfig {
            grid_dim: ((calls as u32).div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = gpu.stream().launch_builder(places);
        launch.arg(&mut buffer);
        // SAFETY: the kernel takes one `unsigned*`, and writes at most `calls + 1` words of it.
        unsafe { launch.launch(config) }?;
        Ok(self.first_outside(&gpu.download(&buffer)?))
    }

    /// What [`KERNEL`] wrote (every place, then the size): the first place outside the tile.
    fn first_outside(&self, written: &[u32]) -> Option<String> {
        let (places, size) = written.split_at(written.len() - 1);
        let size = size[0];
        let last = size.checked_sub(self.span);
        let (call, &place) = places.iter().enumerate().find(|&(_, &place)| last.is_none_or(|last| place > last))?;
        let arguments = self.arguments_of(call as u64).iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
        let signed = match place as i32 {
            negative if negative < 0 => format!(" ({negative} as a signed number)"),
            _ => String::new(),
        };
        let allowed = match (self.span, last) {
            (_, None) => format!("the tile holds {size}, less than one element"),
            (1, Some(last)) => format!("its places are 0 to {last}"),
            (span, Some(last)) => format!("an element takes {span}, so its places are 0 to {last}"),
        };
        Some(format!(
            "{}({arguments}) is {place}{signed}, outside the tile: {} is {size} here, and {allowed}. Memory below or \
             past the tile is not the tile's, even where the GPU lets a store there pass",
            self.function, self.size
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transpose() -> Within {
        Within {
            function: "slot".into(),
            arguments: vec![32, 32],
            steps: Vec::new(),
            span: 1,
            size: "TILE_WORDS".into(),
        }
    }

    #[test]
    fn every_call_is_numbered_with_the_last_argument_fastest() {
        assert_eq!(transpose().arguments_of(0), [0, 0]);
        assert_eq!(transpose().arguments_of(33), [1, 1]);
        let chunks = Within { steps: vec![1, 8], arguments: vec![64, 8], span: 8, ..transpose() };
        assert_eq!(chunks.arguments_of(8 * 5 + 3), [5, 24]);
        let kernel = chunks.kernel();
        assert!(kernel.contains("slot(((blockIdx.x * 256u + threadIdx.x) / 8u % 64u * 1u), "), "{kernel}");
        assert!(kernel.contains("((blockIdx.x * 256u + threadIdx.x) / 1u % 8u * 8u))"), "{kernel}");
        assert!(kernel.contains("< 512u) &&") && kernel.contains("bcm_places[512] = (unsigned)(TILE_WORDS)"));
        assert!(!kernel.contains(" if "), "no keyword a part could define away");
    }

    #[test]
    fn a_place_below_or_past_the_tile_is_named_and_one_inside_is_not() {
        let mut written: Vec<u32> = (0..1024).collect();
        written.push(1024);
        assert_eq!(transpose().first_outside(&written), None);
        written[33] = -30i32 as u32;
        let message = transpose().first_outside(&written).unwrap();
        assert!(
            message.starts_with("slot(1, 1) is 4294967266 (-30 as a signed number), outside the tile: TILE_WORDS is 1024 here, and its places are 0 to 1023."),
            "{message}"
        );
        written[33] = 1024;
        assert!(transpose().first_outside(&written).unwrap().starts_with("slot(1, 1) is 1024, outside"));
        // Nothing written: every place reads as outside, and so does a size of 0.
        let mut unwritten = vec![u32::MAX; 1024];
        unwritten.push(0);
        assert!(transpose().first_outside(&unwritten).unwrap().contains("less than one element"));
        let chunks = Within { arguments: vec![2], span: 8, ..transpose() };
        assert_eq!(chunks.first_outside(&[0, 8, 16]), None);
        assert!(chunks.first_outside(&[0, 9, 16]).unwrap().contains("an element takes 8, so its places are 0 to 8"));
    }

    #[test]
    fn a_malformed_entry_is_named() {
        assert_eq!(transpose().check("x"), Ok(()));
        let bad = [
            Within { arguments: vec![], ..transpose() },
            Within { arguments: vec![32, 0], ..transpose() },
            Within { steps: vec![1], ..transpose() },
            Within { span: 0, ..transpose() },
            Within { arguments: vec![4096, 4096], ..transpose() },
        ];
        for within in bad {
            assert!(within.check("x").unwrap_err().starts_with("exercise x: [exercise.within]: "), "{within:?}");
        }
    }
}
