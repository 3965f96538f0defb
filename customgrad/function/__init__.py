"""The user's Function and its tensors: the contract every call goes through, the inputs drawn from
forward's signature, the dtypes taken, the source shadow a window reads instead of running the
code, torch.library custom ops.
"""
