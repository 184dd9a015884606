import { countries } from "countries-list"

export interface Country {
  readonly code: string
  readonly name: string
}

/** ISO 3166-1 alpha-2 countries from the maintained `countries-list` package, sorted by name. */
export const countryList: ReadonlyArray<Country> = Object.entries(countries)
  .map(([code, country]) => ({ code, name: country.name }))
  .sort((a, b) => a.name.localeCompare(b.name, "en"))

export const countryCodes: ReadonlySet<string> = new Set(countryList.map((c) => c.code))
