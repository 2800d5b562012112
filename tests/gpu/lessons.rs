//! Every lesson on the GPU: kernel outputs and the model's and ncu's conflict tables.
