/**
 * The event signatures the decode stage recognises, as human-readable ABI fragments
 * (https://docs.ethers.org/v6/api/abi/abi-coder/#about-abi). Several entries may share a topic0
 * (same canonical signature, different `indexed` layout); the decoder tells them apart by the
 * number of topics, which the `indexed` keyword fixes (Solidity ABI spec, "Events":
 * https://docs.soliditylang.org/en/latest/abi-spec.html#events).
 * @module
 */

/** One recognised event layout. */
export interface EventSpec {
  /**
   * Value of the record's `standard` field: the token standard or protocol, e.g. `erc20`,
   * `erc721`, `erc1155`, `weth`, `uniswap-v2`, `uniswap-v3`.
   */
  standard: string;
  /** Human-readable ABI fragment with argument names and `indexed` markers. */
  abi: string;
  /**
   * Names of the arguments that are amounts of the emitting contract's own token; only these get
   * `value.scaled` (amount / 10^decimals) when the token's decimals are known.
   */
  scaled?: readonly string[];
  /** Where the layout is specified or observed. */
  source: string;
}

/**
 * Every recognised event layout, in priority order (the first whose topic count fits wins).
 *
 * Notes on ambiguous signatures:
 * - `Transfer(address,address,uint256)` and `Approval(address,address,uint256)`: 3 topics is
 *   ERC-20 (amount in data), 4 topics is ERC-721 (token id indexed). 1 topic (all arguments in
 *   data) is the pre-final ERC-721 draft layout that CryptoKitties emits (EIP-721's "Rationale"
 *   cites CryptoKitties as prior art); it is labelled `erc721`. A few pre-2017 ERC-20 tokens also
 *   declared these events without `indexed`; their logs are labelled `erc721` as well, because a
 *   log alone cannot tell the two apart.
 * - `ApprovalForAll(address,address,bool)` is defined identically by ERC-721 and ERC-1155; it is
 *   labelled `erc721`.
 * - `Deposit`/`Withdrawal` (WETH9) and the Uniswap V2 pair events are also emitted by clones and
 *   forks (SushiSwap pairs, other wrapped-native tokens); the label names the ABI, not the deployer.
 */
export const EVENT_SPECS: readonly EventSpec[] = [
  {
    standard: "erc20",
    abi: "event Transfer(address indexed from, address indexed to, uint256 value)",
    scaled: ["value"],
    source: "EIP-20 https://eips.ethereum.org/EIPS/eip-20",
  },
  {
    standard: "erc721",
    abi: "event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)",
    source: "EIP-721 https://eips.ethereum.org/EIPS/eip-721",
  },
  {
    standard: "erc721",
    abi: "event Transfer(address from, address to, uint256 tokenId)",
    source: "pre-final ERC-721 draft as deployed by CryptoKitties (0x06012c8cf97bead5deae237070f9587f8e7a266d)",
  },
  {
    standard: "erc20",
    abi: "event Approval(address indexed owner, address indexed spender, uint256 value)",
    scaled: ["value"],
    source: "EIP-20 https://eips.ethereum.org/EIPS/eip-20",
  },
  {
    standard: "erc721",
    abi: "event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId)",
    source: "EIP-721 https://eips.ethereum.org/EIPS/eip-721",
  },
  {
    standard: "erc721",
    abi: "event Approval(address owner, address approved, uint256 tokenId)",
    source: "pre-final ERC-721 draft as deployed by CryptoKitties (0x06012c8cf97bead5deae237070f9587f8e7a266d)",
  },
  {
    standard: "erc721",
    abi: "event ApprovalForAll(address indexed owner, address indexed operator, bool approved)",
    source: "EIP-721 https://eips.ethereum.org/EIPS/eip-721 (identical in EIP-1155)",
  },
  {
    standard: "weth",
    abi: "event Deposit(address indexed dst, uint256 wad)",
    scaled: ["wad"],
    source: "WETH9 https://etherscan.io/address/0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2#code",
  },
  {
    standard: "weth",
    abi: "event Withdrawal(address indexed src, uint256 wad)",
    scaled: ["wad"],
    source: "WETH9 https://etherscan.io/address/0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2#code",
  },
  {
    standard: "uniswap-v2",
    abi: "event Swap(address indexed sender, uint256 amount0In, uint256 amount1In, uint256 amount0Out, uint256 amount1Out, address indexed to)",
    source: "Uniswap V2 pair https://docs.uniswap.org/contracts/v2/reference/smart-contracts/pair",
  },
  {
    standard: "uniswap-v2",
    abi: "event Sync(uint112 reserve0, uint112 reserve1)",
    source: "Uniswap V2 pair https://docs.uniswap.org/contracts/v2/reference/smart-contracts/pair",
  },
  {
    standard: "uniswap-v3",
    abi: "event Swap(address indexed sender, address indexed recipient, int256 amount0, int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)",
    source: "Uniswap V3 pool https://docs.uniswap.org/contracts/v3/reference/core/interfaces/pool/IUniswapV3PoolEvents",
  },
  {
    standard: "erc1155",
    abi: "event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)",
    source: "EIP-1155 https://eips.ethereum.org/EIPS/eip-1155",
  },
  {
    standard: "erc1155",
    abi: "event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)",
    source: "EIP-1155 https://eips.ethereum.org/EIPS/eip-1155",
  },
];
