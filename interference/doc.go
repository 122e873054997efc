// Package interference is the co-location model: how much slower than alone a
// job runs while others run beside it on one GPU, per job and per device, for
// each way of sharing compute. It reads measured pairs (pair files: two jobs
// alone and side by side, the format of Gavel's and Lucid's published
// measurements), fits a model to them, and answers the simulator's device model
// (sim.GPU), which runs iterations at the rates it gives.
//
// It is plain data and arithmetic: it keeps no clock and imports no engine.
package interference
