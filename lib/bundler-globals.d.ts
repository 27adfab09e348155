// What webpack defines inside a bundle; lib/loader.js checks for it (tsconfig.lib.json type-checks lib/).
declare const __webpack_require__: unknown;
declare const __non_webpack_require__: NodeJS.Require;
