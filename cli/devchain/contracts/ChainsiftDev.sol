// SPDX-License-Identifier: MIT
// Contracts of chainsift's embedded dev chain (cli/devchain). Compiled at run time by solc-js
// (the `solc` npm package, offline) against OpenZeppelin Contracts 5 from node_modules.
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC721} from "@openzeppelin/contracts/token/ERC721/ERC721.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @title Chainsift Test Token (CST)
/// @notice Plain OpenZeppelin ERC-20 with 6 decimals (like USDC) and an owner-only mint.
contract ChainsiftTestToken is ERC20, Ownable {
    constructor(address initialOwner) ERC20("Chainsift Test Token", "CST") Ownable(initialOwner) {}

    /// @notice 6 decimals, so that amounts differ visibly from 18-decimal ETH values.
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice Creates `amount` base units (1 CST = 10^6) for `to`.
    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}

/// @title Chainsift Test NFT (CSNFT)
/// @notice Plain OpenZeppelin ERC-721 with sequential ids starting at 1 and an owner-only mint.
contract ChainsiftTestNFT is ERC721, Ownable {
    uint256 public nextTokenId = 1;

    constructor(address initialOwner) ERC721("Chainsift Test NFT", "CSNFT") Ownable(initialOwner) {}

    /// @notice Mints the next id to `to` and returns it.
    function mint(address to) external onlyOwner returns (uint256 tokenId) {
        tokenId = nextTokenId++;
        _mint(to, tokenId);
    }
}
