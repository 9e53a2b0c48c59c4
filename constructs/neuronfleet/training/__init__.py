"""TrainiumCluster and the AWS Batch building blocks it (and the GPU pool) use."""
