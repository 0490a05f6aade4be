"""runtime/data/Sampler.h's TrainingSampler and EvalSampler, in Python."""
M = (1 << 64) - 1


def mix64(v):
    v = (v + 0x9e3779b97f4a7c15) & M
    v = ((v ^ (v >> 30)) * 0xbf58476d1ce4e5b9) & M
    v = ((v ^ (v >> 27)) * 0x94d049bb133111eb) & M
    return v ^ (v >> 31)


def counter_stream(stream, counter):
    return mix64(stream ^ mix64(counter))


def bounded_draw(bits, bound):
    product = bits * bound
    low = product & M
    if low < bound:
        threshold = ((1 << 64) - bound) % bound
        attempt = 1
        while low < threshold:
            product = counter_stream(bits, attempt) * bound
            low = product & M
            attempt += 1
    return product >> 64


def permutation(seed, samples, epoch):
    order = list(range(samples))
    stream = counter_stream(mix64(seed), epoch)
    for i in range(samples - 1, 0, -1):
        j = bounded_draw(counter_stream(stream, i), i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def training_step(seed, samples, step, global_batch):
    """The samples of 0-based step `step`, in global-order position."""
    out, cache = [], {}
    for p in range(step * global_batch, (step + 1) * global_batch):
        e = p // samples
        if e not in cache:
            cache[e] = permutation(seed, samples, e)
        out.append(cache[e][p % samples])
    return out
