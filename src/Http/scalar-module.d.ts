/** The path of a file embedded in the build (`with { type: "file" }`). */
declare module "#scalar-module" {
  const path: string
  export default path
}
