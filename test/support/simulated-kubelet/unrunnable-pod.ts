/** Thrown while reading a Pod the simulated kubelet cannot run; becomes the Pod's Failed message. */
export class UnrunnablePod extends Error {}
