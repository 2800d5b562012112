// CUDA code blocks. The highlight.js that mdBook bundles (10.1) knows C++ but not CUDA: this
// registers `cuda` as C++ plus CUDA's qualifiers and built-ins, then highlights the ```cuda
// blocks, which book.js left plain because it ran before the language existed.
(function () {
    "use strict";
    if (typeof hljs === "undefined" || !hljs.getLanguage("cpp")) {
        return;
    }
    hljs.registerLanguage("cuda", function () {
        const cuda = hljs.getLanguage("cpp").rawDefinition();
        cuda.name = "CUDA";
        cuda.aliases = ["cu", "cuh"];
        cuda.keywords.keyword +=
            " __global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__" +
            " __forceinline__ __noinline__ __launch_bounds__ __grid_constant__";
        cuda.keywords.built_in +=
            " threadIdx blockIdx blockDim gridDim warpSize dim3 half half2 float2 float4 int2 int4 uint2 uint4" +
            " __syncthreads __syncwarp __shfl_sync __shfl_down_sync __shfl_xor_sync __ldg atomicAdd";
        return cuda;
    });
    document.querySelectorAll("code.language-cuda").forEach(function (block) {
        hljs.highlightBlock(block);
    });
})();
