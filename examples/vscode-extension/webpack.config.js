// webpack 5 build of the extension (build.mjs --bundler webpack uses this).
// What acp-native needs: target node, `vscode` external, and the binary
// copied next to the bundle (build.mjs) and loaded with loadNativeBinding.
// Nothing here handles `.node` files: acp-native never `require`s one that
// webpack could see.
// biome-ignore lint/suspicious/noRedundantUseStrict: a CommonJS file (no "type": "module"), where the directive is not redundant
'use strict';
const path = require('node:path');
const webpack = require('webpack');

/** @param {{ binary: string, acpNative?: string }} env */
module.exports = (env) => ({
  target: 'node',
  mode: 'production',
  entry: path.join(__dirname, 'src', 'extension.mjs'),
  output: {
    path: path.join(__dirname, 'dist'),
    filename: 'extension.js',
    library: { type: 'commonjs2' },
    clean: false,
  },
  externals: { vscode: 'commonjs vscode' },
  // Keep Node's own __dirname/__filename (the bundle's directory).
  node: { __dirname: false, __filename: false },
  // In this repository `acp-native` is the repository itself; an extension
  // that installed it from npm needs no alias.
  resolve: env.acpNative ? { alias: { 'acp-native$': env.acpNative } } : {},
  plugins: [new webpack.DefinePlugin({ ACP_NATIVE_BINARY: JSON.stringify(env.binary) })],
  optimization: { minimize: false },
  devtool: false,
  performance: { hints: false },
});
